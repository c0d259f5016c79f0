import Hummingbird
import GRDB

/// The `crashsym serve` application: routes, auth, storage (SQLite + content-addressed files), limits.
enum SymServerModule {}
