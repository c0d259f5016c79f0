import NIOCore
#if canImport(Glibc)
import Glibc
#endif

extension SymbolServer {
    /// One line saying why the server could not start listening on `host:port` and what to do,
    /// instead of NIO's error (`bind(descriptor:ptr:bytes:)`, an errno and its wrapper types).
    public static func startupFailure(_ error: any Error, host: String, port: Int) -> String {
        let address = "\(host):\(port)"
        if let error = error as? IOError {
            switch error.errnoCode {
            case EADDRINUSE:
                return "cannot listen on \(address): the port is in use by another process; stop it or choose another --port"
                    + " (0 picks a free one)"
            case EACCES:
                return "cannot listen on \(address): permission denied (ports below 1024 need privileges); choose another --port"
            case EADDRNOTAVAIL:
                return "cannot listen on \(address): \(host) is not an address of this machine; check --host"
            default:
                return "cannot listen on \(address): \(String(cString: strerror(error.errnoCode))); check --host and --port"
            }
        }
        if error is SocketAddressError {
            return "cannot listen on \(address): \(host) is not a known host name or address; check --host"
        }
        return "cannot listen on \(address): \(error)"
    }
}
