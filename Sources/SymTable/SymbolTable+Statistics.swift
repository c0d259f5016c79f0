extension SymbolTable {
    /// Counts describing a table: what went in (model counts) and what it holds (record counts).
    public struct Statistics: Sendable, Equatable {
        /// Physical functions in the model the table was written from.
        public var functions: UInt64
        /// Inlined subroutines in the model.
        public var inlinedScopes: UInt64
        /// Line-table rows in the model.
        public var lineRows: UInt64
        /// ELF symbols kept after removing duplicates at one address.
        public var symbols: UInt64
        /// Address ranges in the table.
        public var ranges: Int
        /// Distinct scope records (innermost function and its caller) in the table.
        public var scopeRecords: Int
        /// Distinct call-site source-location records (file, line, column, function, caller) in the
        /// table; the innermost frame's location is stored in each range instead.
        public var sourceLocations: Int
        /// Distinct (directory, file) records in the table.
        public var files: Int
        /// Distinct function names in the table.
        public var names: Int
        /// Distinct strings in the table's string data.
        public var strings: Int
        /// Size of the whole table in bytes.
        public var byteCount: Int

        /// Creates statistics.
        public init(functions: UInt64, inlinedScopes: UInt64, lineRows: UInt64, symbols: UInt64, ranges: Int,
                    scopeRecords: Int, sourceLocations: Int, files: Int, names: Int, strings: Int, byteCount: Int) {
            self.functions = functions
            self.inlinedScopes = inlinedScopes
            self.lineRows = lineRows
            self.symbols = symbols
            self.ranges = ranges
            self.scopeRecords = scopeRecords
            self.sourceLocations = sourceLocations
            self.files = files
            self.names = names
            self.strings = strings
            self.byteCount = byteCount
        }
    }
}
