import CCurl

/// HTTP client over libcurl: symbol upload with streamed bodies, progress and retries.
enum SymClientModule {}
