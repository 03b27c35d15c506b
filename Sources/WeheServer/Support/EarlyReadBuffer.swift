import NIOCore

/// At the end of an accepted connection's pipeline while the connection waits in its listener's accept stream, until
/// the task serving it adds its async wrapper (`NIOAsyncChannel`) and removes this handler: keeps what arrives (reads
/// and their completions, user events such as the end of input, errors) and hands it on, in order, when removed. The
/// connection thus goes on reading while it is queued (a TLS handshake progresses, the first bytes stop the first-byte
/// deadline) and yet owns no async writer there, which NIO would stop the process for if the connection were dropped
/// unserved when the server stops. After `maximumReads` reads it asks for no more until removed: the same
/// bound as the async wrapper's back-pressure. With `closeAfter`, a connection still queued that long is closed (one
/// that no accept loop will take any more, the server having stopped).
final class EarlyReadBuffer: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    private enum Event {
        case read(NIOAny)
        case readComplete
        case userEvent(Any)
        case error(any Error)
    }

    private var events: [Event] = []
    private var reads = 0
    private var readHeld = false
    private let maximumReads: Int
    private let closeAfter: TimeAmount?
    private var deadline: Scheduled<Void>?

    init(maximumReads: Int = 4, closeAfter: TimeAmount? = nil) {
        self.maximumReads = maximumReads
        self.closeAfter = closeAfter
    }

    func handlerAdded(context: ChannelHandlerContext) {
        guard let closeAfter else { return }
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: closeAfter) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        events.append(.read(data))
        reads += 1
    }

    func channelReadComplete(context: ChannelHandlerContext) { events.append(.readComplete) }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) { events.append(.userEvent(event)) }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { events.append(.error(error)) }

    func read(context: ChannelHandlerContext) {
        if reads >= maximumReads {
            readHeld = true
        } else {
            context.read()
        }
    }

    func removeHandler(context: ChannelHandlerContext, removalToken: ChannelHandlerContext.RemovalToken) {
        let pending = events
        events = []
        for event in pending {
            switch event {
            case .read(let data): context.fireChannelRead(data)
            case .readComplete: context.fireChannelReadComplete()
            case .userEvent(let event): context.fireUserInboundEventTriggered(event)
            case .error(let error): context.fireErrorCaught(error)
            }
        }
        if readHeld {
            readHeld = false
            context.read()
        }
        context.leavePipeline(removalToken: removalToken)
    }
}

extension Channel {
    /// Removes the connection's `EarlyReadBuffer` (on its event loop, once its async wrapper is in place), which hands
    /// on what it kept.
    func removeEarlyReadBuffer() throws {
        let pipeline = pipeline.syncOperations
        pipeline.removeHandler(try pipeline.handler(type: EarlyReadBuffer.self), promise: nil)
    }
}
