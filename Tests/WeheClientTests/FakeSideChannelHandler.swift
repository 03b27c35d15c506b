import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import WeheCore
import WeheTestKit
import WeheWire

/// The server side of one side channel.
final class FakeSideChannelHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    let server: FakeWeheServer
    private var framer = SideChannelFramer()
    private var received: [String] = []
    private var declaration: IDDeclaration?
    private var done = ""
    private var index = -1

    init(server: FakeWeheServer) {
        self.server = server
    }

    func channelActive(context: ChannelHandlerContext) {
        let evict = server.behaviour.closeSideChannelsAccepted
        let atOnce = !server.behaviour.closesAtFirstBytes
        let evicted = server.state.withLock { state in
            let position = state.sideChannelsAccepted
            state.sideChannelsAccepted += 1
            guard !evict(position) else {
                if atOnce { state.sideChannelsEvicted += 1 }
                return true
            }
            state.messages.append([])
            index = state.messages.count - 1
            return false
        }
        if evicted && atOnce {
            context.close(promise: nil)
            return
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard index >= 0 else {
            // Closed at its first bytes (`closesAtFirstBytes`): counted once, however the bytes arrive.
            if index == -1 { server.state.withLock { $0.sideChannelsEvicted += 1 } }
            index = -2
            context.close(promise: nil)
            return
        }
        framer.append(unwrapInboundIn(data).readableBytesView)
        while let frame = try? framer.nextFrame() {
            handle(String(decoding: frame, as: UTF8.self), frame: frame, channel: context.channel)
        }
    }

    private func handle(_ text: String, frame: [UInt8], channel: any Channel) {
        received.append(text)
        let position = received.count
        server.state.withLock { $0.messages[index].append(text) }
        switch position {
        case 1:
            declaration = try? IDDeclaration(parsing: frame)
            if let declaration { server.state.withLock { $0.declarations.append(declaration) } }
        case 2 where server.behaviour.closeUncleanlyAfterDeclaration:
            (try? channel.pipeline.syncOperations.handler(type: UncleanCloser.self))?.closeSocket()
        case 2, 3:
            guard (position == 3) == server.behaviour.grantsAfterNoIperf else { return }
            let strict = server.behaviour.refusesChangeSpecs && received[1] != SideChannelMessage.noChange
            let grant =
                strict
                ? "0;5;unknown change spec"
                : server.behaviour.permission ?? "1;127.0.0.1;\(server.behaviour.sampleCount)"
            FakeWeheServer.send(grant, on: channel)
            if grant.hasPrefix("0") { channel.close(promise: nil) }
        case 4:
            guard let declaration, let trace = server.traces[declaration.replayName] else {
                channel.close(promise: nil)
                return
            }
            server.state.withLock { $0.current = (trace, channel) }
            FakeWeheServer.send(server.portMap(), on: channel)
            FakeWeheServer.send(trace.transport == .udp ? "1" : "0", on: channel)
        default:
            if text.hasPrefix("DONE;") {
                done = text
            } else if text.hasPrefix("[[") {
                if let declaration, let samples = try? ThroughputUpload.parse(frame) {
                    let upload = FakeWeheServer.Upload(
                        declaration: declaration, done: done, samples: samples.droppingLastSample())
                    server.state.withLock { $0.uploads.append(upload) }
                }
                if !server.behaviour.acknowledgesAfterResultNo { FakeWeheServer.send("OK", on: channel) }
            } else if text == "Result;No" {
                FakeWeheServer.send("OK", on: channel)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        server.state.withLock { $0.sideChannelsClosed += 1 }
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Sits next to the socket, below TLS: `closeSocket()` closes the connection from there, so no TLS close_notify is
/// sent first.
final class UncleanCloser: ChannelOutboundHandler {
    typealias OutboundIn = ByteBuffer
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    /// Closes the socket; call on the channel's event loop.
    func closeSocket() {
        context?.close(promise: nil)
    }
}
