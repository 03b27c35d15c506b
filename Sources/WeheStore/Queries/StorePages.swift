/// Where a paged read stopped: the sort key of the last row delivered (start time in microseconds and the row id).
package struct PageCursor: Sendable, Hashable {
    /// Start time of the last row, microseconds since 1970 (UTC).
    package var time: Int64
    /// Row id of the last row (ties on `time` are broken by it).
    package var id: Int64

    /// Creates a cursor.
    package init(time: Int64, id: Int64) {
        self.time = time
        self.id = id
    }
}

/// One page of a paged read and the cursor of its last row (`nil` when there is nothing after it).
package struct StorePage<Element: Sendable>: Sendable {
    /// The rows of this page.
    package var elements: [Element]
    /// Where the next page starts; `nil` when this is the last page.
    package var next: PageCursor?

    /// Creates a page.
    package init(elements: [Element], next: PageCursor?) {
        self.elements = elements
        self.next = next
    }
}

/// A large query result read page by page (keyset pagination), so a million rows never sit in memory at once.
///
/// Each iteration starts a fresh read from the beginning. Errors surface from `next()` as `WeheStoreError`; rows
/// delivered before an error stay valid, and a new iteration may be started to retry.
package struct StorePages<Element: Sendable>: AsyncSequence, Sendable {
    /// Errors are store errors.
    package typealias Failure = WeheStoreError
    /// Reads the page after the cursor (`nil`: the first page).
    package typealias Fetch = @Sendable (PageCursor?) async throws(WeheStoreError) -> StorePage<Element>

    let fetch: Fetch

    /// Creates a sequence from a page reader.
    package init(fetch: @escaping Fetch) {
        self.fetch = fetch
    }

    /// Iterates the rows.
    package struct AsyncIterator: AsyncIteratorProtocol {
        let fetch: Fetch
        var buffer: [Element] = []
        var index = 0
        var cursor: PageCursor?
        var started = false
        var exhausted = false

        /// The next row, or `nil` after the last.
        package mutating func next() async throws(WeheStoreError) -> Element? {
            while index >= buffer.count {
                if exhausted { return nil }
                if started && cursor == nil {
                    exhausted = true
                    return nil
                }
                let page = try await fetch(cursor)
                started = true
                buffer = page.elements
                index = 0
                cursor = page.next
                if page.next == nil && page.elements.isEmpty {
                    exhausted = true
                    return nil
                }
            }
            let element = buffer[index]
            index += 1
            return element
        }

        /// The next row, or `nil` after the last.
        package mutating func next(isolation actor: isolated (any Actor)?) async throws(WeheStoreError) -> Element? {
            try await next()
        }
    }

    /// Starts a read.
    package func makeAsyncIterator() -> AsyncIterator { AsyncIterator(fetch: fetch) }
}
