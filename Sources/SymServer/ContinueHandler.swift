import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Answers `Expect: 100-continue` with an interim `100 Continue` as soon as the request head
/// arrives, so that a client waiting for it sends its body at once: curl waits a second for it
/// before uploading anything over 1 MB. A request whose declared `Content-Length` is over the
/// body limit gets no `100`: the route answers it `413` at once, and the client that asked need
/// not send the body at all.
///
/// In the HTTP/1 pipeline after the conversion to HTTP types (Hummingbird's
/// `additionalChannelHandlers`); the head goes on without the `Expect` field, which is answered.
final class ContinueHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    private let maxBodyBytes: UInt64

    init(maxBodyBytes: UInt64) {
        self.maxBodyBytes = maxBodyBytes
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data),
              let expectation = head.headerFields[.expect],
              expectation.lowercased() == "100-continue" else {
            context.fireChannelRead(data)
            return
        }
        head.headerFields[.expect] = nil
        let declared = head.headerFields[.contentLength].flatMap { UInt64($0) }
        if declared.map({ $0 <= maxBodyBytes }) ?? true {
            context.writeAndFlush(wrapOutboundOut(.head(HTTPResponse(status: .continue))), promise: nil)
        }
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }
}
