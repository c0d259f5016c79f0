import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Two rules for each connection that Hummingbird's HTTP/1 pipeline lacks:
///
/// - **A deadline for each request's head** (`--header-timeout`): counted from the connection's
///   start, or from the end of the previous response, until a whole head has arrived. A client
///   that trickles its header (slowloris) or keeps a connection idle is disconnected then.
///   Bodies are not its business: a body's time is `--request-timeout`.
/// - **Nothing more is read after a response that closes the connection** (`Connection: close`,
///   which `RequestMiddleware` puts on refusals such as 401 and 413): Hummingbird would otherwise
///   read and discard the rest of the declared body, gigabytes a second for a client that keeps
///   sending. Once the response is written, the output is shut (the client sees the end of the
///   answer) and reads stop; the connection is closed after `linger`, which leaves the client
///   time to read the answer before unread input makes the kernel reset the connection.
///
/// In the HTTP/1 pipeline after the conversion to HTTP types (Hummingbird's
/// `additionalChannelHandlers`), so it sees request heads and response parts; every read the
/// channel makes passes through it on the way to the socket.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let headerTimeout: TimeAmount
    private let linger: TimeAmount
    private let metrics: ServerMetrics
    private var deadline: Scheduled<Void>?
    /// Heads read whose response has not ended.
    private var requestsInProgress = 0
    /// Whether the response being written closes the connection.
    private var closesAfterResponse = false
    /// Whether that response has been written: nothing more is read.
    private var closing = false

    init(headerTimeout: TimeAmount, linger: TimeAmount = .seconds(1), metrics: ServerMetrics) {
        self.headerTimeout = headerTimeout
        self.linger = linger
        self.metrics = metrics
    }

    func handlerAdded(context: ChannelHandlerContext) {
        // One guard per accepted connection.
        metrics.accepted()
        if context.channel.isActive { armDeadline(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarmDeadline()
    }

    func channelActive(context: ChannelHandlerContext) {
        armDeadline(context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarmDeadline()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // Whatever was already read past a closing response is dropped unseen.
        guard !closing else { return }
        if case .head = unwrapInboundIn(data) {
            requestsInProgress += 1
            disarmDeadline()
        }
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        guard !closing else { return }
        context.read()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let response) where response.status.kind != .informational:
            closesAfterResponse = response.headerFields[.connection]?.lowercased() == "close"
            context.write(data, promise: promise)
        case .head, .body:
            context.write(data, promise: promise)
        case .end:
            requestsInProgress = max(0, requestsInProgress - 1)
            guard closesAfterResponse else {
                context.write(data, promise: promise)
                if requestsInProgress == 0 { armDeadline(context) }
                return
            }
            closing = true
            disarmDeadline()
            context.writeAndFlush(data, promise: promise)
            // Shut after the answer is written (NIO waits for pending writes), then close.
            context.close(mode: .output, promise: nil)
            let loop = context.eventLoop.assumeIsolated()
            loop.scheduleTask(in: linger) { context.close(promise: nil) }
        }
    }

    private func armDeadline(_ context: ChannelHandlerContext) {
        guard deadline == nil, !closing else { return }
        let metrics = metrics
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: headerTimeout) { [self] in
            deadline = nil
            guard requestsInProgress == 0, !closing else { return }
            metrics.rejected("header-timeout")
            context.close(promise: nil)
        }
    }

    private func disarmDeadline() {
        deadline?.cancel()
        deadline = nil
    }
}
