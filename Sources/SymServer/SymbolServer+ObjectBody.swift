import Hummingbird
#if canImport(Glibc)
import Glibc
#endif

extension SymbolServer {
    /// A response body streaming an object's local file; a temporary copy (fetched from S3) is
    /// removed once sent (or, if never sent, with the scratch directory at the next start).
    func objectBody(_ file: ObjectFile, _ context: BasicRequestContext) async throws -> ResponseBody {
        let body = try await FileIO().loadFile(path: file.path, context: context)
        guard file.temporary else { return body }
        let path = file.path
        return ResponseBody(contentLength: body.contentLength) { writer in
            defer { unlink(path) }
            try await body.write(writer)
        }
    }
}
