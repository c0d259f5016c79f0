/// Crash-report model, format detection, parsers and writers (see ../shared/DESIGN.md).
enum SymReportModule {}
