import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization
import WeheCore
import WeheTestKit
import WeheWire

/// TCP replay: read each request group, answer with `response_len` zero bytes.
final class FakeTCPReplayHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let server: FakeWeheServer
    private var groups: [(request: Int, response: Int)] = []
    private var buffered = 0
    private var loaded = false

    init(server: FakeWeheServer) {
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if !loaded {
            loaded = true
            server.state.withLock { $0.tcpConnections += 1 }
            guard let trace = server.state.withLock({ $0.current?.trace }) else {
                context.close(promise: nil)
                return
            }
            var accumulated = 0
            for packet in trace.packets {
                accumulated += packet.payload.count
                if packet.responseLength > 0 {
                    groups.append((accumulated, packet.responseLength))
                    accumulated = 0
                }
            }
        }
        buffered += unwrapInboundIn(data).readableBytes
        guard !server.behaviour.stallReplay else { return }
        while let group = groups.first, buffered >= group.request {
            buffered -= group.request
            groups.removeFirst()
            var length = group.response
            if let limit = server.behaviour.closeAfterBytes { length = min(length, limit) }
            context.writeAndFlush(
                wrapOutboundOut(context.channel.allocator.buffer(repeating: 0, count: length)), promise: nil)
            if server.behaviour.closeAfterBytes != nil {
                context.close(promise: nil)
                return
            }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// UDP replay: echo every datagram; `STARTED` before the first, `DONE` after the trace's last.
final class FakeUDPHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    let server: FakeWeheServer
    private var seen: [SocketAddress: Int] = [:]

    init(server: FakeWeheServer) {
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard let current = server.state.withLock({ $0.current }) else { return }
        let port = UInt16(envelope.remoteAddress.port ?? 0)
        let count = (seen[envelope.remoteAddress] ?? 0) + 1
        seen[envelope.remoteAddress] = count
        server.state.withLock { $0.udpDatagrams += 1 }
        if count == 1 {
            FakeWeheServer.send(SideChannelMessage.Notification.started(clientPort: port).body, on: current.channel)
        }
        context.writeAndFlush(
            wrapOutboundOut(AddressedEnvelope(remoteAddress: envelope.remoteAddress, data: envelope.data)), promise: nil
        )
        if count == current.trace.packets.count {
            FakeWeheServer.send(SideChannelMessage.Notification.done(clientPort: port).body, on: current.channel)
        }
    }
}
