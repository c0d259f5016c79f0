import SymELF
import SymReport

/// Finds the symbols of a module: asked for a module (build-id, name, path), it answers a ready
/// table, ELF files for the engine to convert, or nothing, with the candidates it tried either
/// way. Providers find; they never convert, cache, or compute addresses: the `Symbolicator`
/// decides those once for every provider (DESIGN.md "The crash service").
///
/// A provider is synchronous: one that fetches over a network or from an object store makes the
/// module local first (the server's step "fetch first, then look up") and answers from there.
/// It is asked at most once per module and `Symbolicator`; keep expensive state (indexes, opened
/// tables: `OpenedTableCache`) in the provider, which may be shared by many symbolicators and
/// threads.
///
/// A provider answering from tables kept by build-id, at paths without a `.csym` suffix:
///
/// ```swift
/// struct StoreProvider: SymbolProvider {
///     let tables: OpenedTableCache            // shared by every request
///     let pathOf: @Sendable (String) -> String?  // build-id → local file of the stored table
///
///     func find(_ module: ModuleQuery) -> SymbolAnswer {
///         guard let id = module.buildID, let path = pathOf(id) else {
///             return .notFound([SymbolCandidate(source: .init(rawValue: "store"), location: module.buildID ?? module.name,
///                                               outcome: .absent)])
///         }
///         // Opens (and checks) the table once however many threads ask; an unreadable file is
///         // a candidate with its reason, and the answer then is not-found.
///         return module.table(at: path, source: .init(rawValue: "store"), opening: tables)
///     }
/// }
/// ```
///
/// `ModuleQuery.inspect(_:source:)` examines any file (ELF or table, by content, not by name)
/// and says whether it is the module's, with the candidate to report; `SymbolAnswer.table(_:at:candidates:)`
/// answers with a table already open.
public protocol SymbolProvider: Sendable {
    /// The symbols of `module`, or the candidates tried when this provider has none.
    func find(_ module: ModuleQuery) -> SymbolAnswer

    /// Whether `find` may wait on a network (a debuginfod server, a crashsym server): the
    /// `Symbolicator` then resolves the modules of a report at once, so that the waits overlap
    /// ("fetch first, then look up").
    var fetchesOverNetwork: Bool { get }
}

extension SymbolProvider {
    /// Local providers answer without waiting on a network.
    public var fetchesOverNetwork: Bool { false }
}

/// What a provider answers for one module.
public struct SymbolAnswer: Sendable {
    /// A ready table of the module (nil: none).
    public var table: ModuleSymbols?
    /// Where `table` came from (a path, URL or store key), for `--explain` and the JSON report.
    public var tableLocation: String?
    /// ELF files of the module (its binary, its separate debug file) for the engine to convert,
    /// or, beside a table, to place addresses with (its program headers).
    public var objects: [ELFFile]
    /// Every candidate tried, in order, matched or not.
    public var candidates: [SymbolCandidate]

    /// Creates an answer.
    public init(table: ModuleSymbols? = nil, tableLocation: String? = nil, objects: [ELFFile] = [],
                candidates: [SymbolCandidate] = []) {
        self.table = table
        self.tableLocation = tableLocation
        self.objects = objects
        self.candidates = candidates
    }

    /// A ready table (already open) found at `location`.
    public static func table(_ table: ModuleSymbols, at location: String, candidates: [SymbolCandidate] = []) -> SymbolAnswer {
        SymbolAnswer(table: table, tableLocation: location, candidates: candidates)
    }

    /// ELF files for the engine to convert.
    public static func objects(_ objects: [ELFFile], candidates: [SymbolCandidate] = []) -> SymbolAnswer {
        SymbolAnswer(objects: objects, candidates: candidates)
    }

    /// Nothing found; `candidates` say where the provider looked and why each did not do.
    public static func notFound(_ candidates: [SymbolCandidate]) -> SymbolAnswer {
        SymbolAnswer(candidates: candidates)
    }

    /// Whether the answer has neither a table nor ELF files.
    public var isEmpty: Bool { table == nil && objects.isEmpty }

    /// Adds `other`'s candidates and ELF files (not already here) to this answer, and its table
    /// when this one has none.
    mutating func merge(_ other: SymbolAnswer) {
        candidates += other.candidates
        for object in other.objects where !objects.contains(where: { $0.path == object.path }) { objects.append(object) }
        if table == nil, let found = other.table {
            table = found
            tableLocation = other.tableLocation
        }
    }
}

/// Asks providers in order, as one provider: the first table answers (later providers are then
/// asked only for ELF files that place its addresses, and may skip work: `ModuleQuery.tableFound`);
/// ELF files are gathered from every provider asked (a binary from one, its debug file from the
/// next); candidates are kept from all of them, in order.
public struct SymbolProviderChain: SymbolProvider {
    /// The providers, in the order they are asked.
    public let providers: [any SymbolProvider]
    /// Whether some provider fetches over a network.
    public let fetchesOverNetwork: Bool

    /// A chain asking `providers` in order.
    public init(_ providers: [any SymbolProvider]) {
        self.providers = providers
        fetchesOverNetwork = providers.contains { $0.fetchesOverNetwork }
    }

    public func find(_ module: ModuleQuery) -> SymbolAnswer {
        var answer = SymbolAnswer()
        var query = module
        for provider in providers {
            answer.merge(provider.find(query))
            if answer.table != nil && !answer.objects.isEmpty { break }
            query.objects = answer.objects
            query.tableFound = answer.table != nil
        }
        return answer
    }
}
