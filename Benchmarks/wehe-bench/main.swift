// wehe-bench: prints speed figures. Not a test: nothing here asserts a time. Build in release:
//   swift run -c release wehe-bench replays [dir]
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let suite = arguments.first ?? "help"
let rest = Array(arguments.dropFirst())

switch suite {
case "replays":
    runReplayBenchmarks(directory: rest.first ?? "../shared/replays")
case "statistics":
    runStatisticsBenchmarks()
case "analysis-cost":
    runAnalysisCostBenchmarks(rest)
case "store":
    await runStoreBenchmarks(postgresURL: getenv("WEHE_BENCH_POSTGRES_URL").map { String(cString: $0) })
case "client":
    await runClientBenchmarks(replays: rest.first ?? "../shared/replays")
case "dashboard":
    await runDashboardSuite(rest)
case "as-table":
    runASTableBenchmark(lines: rest.first.flatMap { Int($0) } ?? 1_000_000)
case "crowd":
    if let options = CrowdBenchmarkOptions.parse(rest) {
        await runCrowdBenchmark(options)
    } else {
        print(
            "usage: wehe-bench crowd [records] [--parallelism P] [--batch B] [--python N | --no-python] "
                + "[--check-sequential]")
    }
default:
    print(
        """
        usage: wehe-bench <suite> [options]
          replays [dir]      load + validate a replay directory and its largest trace
          statistics         exact KS p-value timings
          analysis-cost [n]  one test's analysis by sample count: the server's bounded KS against SciPy's auto
          store              SQLite (and PostgreSQL via $WEHE_BENCH_POSTGRES_URL) inserts/s and 1M-test streaming
          client [dir]       send lateness on loopback (Youtube, Skype), wall time / (2 x trace duration),
                             client CPU and peak memory of a 50 MB port test
          dashboard [history-tests] [crowd-tests] [--memory]
                             render times of the history page over 10 000 tests of one user and of the operator
                             page (provider x app matrix) over 1 000 000 tests, SQLite (SQL aggregates)
          as-table [lines]   IP-to-AS table load time for a generated RouteViews file (default 1 000 000 lines)
          crowd [records] [--parallelism P] [--batch B] [--python N | --no-python] [--check-sequential]
                             crowd-sourced analysis over synthetic test records (default 1 000 000), then
                             scripts/crowd_reference.py on the same records (default: as many) and the ratio
        """
    )
}
