/// crashsym's built-in grouping rules: the table of docs/grouping.md, in the order they are
/// tried. Learned from Mozilla Socorro's signature lists (`irrelevant_signature_re`,
/// `prefix_signature_re`, `signatures_with_line_numbers`) and Sentry's native grouping
/// enhancements (`-group` on runtime and panic frames, `-app` on system paths); the table is ours.
extension GroupingRules {
    /// The built-in rules, each numbered by its position.
    public static let builtinRules: [GroupingRule] = {
        var rules: [GroupingRule] = []
        func add(_ action: GroupingRule.Action, _ note: String, functions: [String] = [], modules: [String] = [], files: [String] = []) {
            for pattern in functions {
                rules.append(GroupingRule(action, function: GlobPattern(pattern), note: note, origin: .builtin, index: rules.count))
            }
            for pattern in modules {
                rules.append(GroupingRule(action, module: GlobPattern(pattern), note: note, origin: .builtin, index: rules.count))
            }
            for pattern in files {
                rules.append(GroupingRule(action, file: GlobPattern(pattern), note: note, origin: .builtin, index: rules.count))
            }
        }

        // Signal delivery: a handler that prints a backtrace (backtrace_symbols_fd, a crash
        // reporter) runs on top of the interrupted stack; the trampoline separates the two.
        add(.reporter, "signal trampoline: the frames above it are the signal handler, not the bug",
            functions: ["__restore_rt", "__kernel_rt_sigreturn", "__kernel_sigreturn", "_sigtramp", "__sigreturn", "sigreturn",
                        "<signal handler called>", "__vdso_rt_sigreturn", "swift::runtime::backtrace::*",
                        "google_breakpad::ExceptionHandler::*", "crashpad::*"])
        add(.skip, "the backtrace call itself", functions: ["backtrace", "__backtrace", "__GI___backtrace", "backtrace_symbols_fd",
                                                              "_Unwind_Backtrace", "_Unwind_RaiseException", "_Unwind_Resume"])

        // Process termination: where the C library ends a process says nothing about why.
        add(.skip, "C library abort and signal machinery",
            functions: ["abort", "raise", "gsignal", "pthread_kill", "__pthread_kill", "__pthread_kill_implementation",
                        "__pthread_kill_internal", "__GI_*", "__libc_message", "__libc_message_impl", "__libc_fatal",
                        "__fortify_fail", "__chk_fail", "__stack_chk_fail", "__stack_chk_fail_local", "__abort_msg", "__kill",
                        "kill", "tgkill", "__tgkill", "syscall", "__libc_signal_restore_set", "internal_signal_restore_set"])
        add(.skip, "assertion failure reporting: the caller of assert is the bug",
            functions: ["__assert_fail", "__assert_fail_base", "__assert_perror_fail", "__assert", "__assert2", "__assert_rtn",
                        "std::__glibcxx_assert_fail", "std::__replacement_assert", "std::__libcpp_verbose_abort",
                        "std::__1::__libcpp_verbose_abort"])
        add(.skip, "allocator internals: the caller of malloc/free is the bug",
            functions: ["malloc", "free", "calloc", "realloc", "reallocarray", "cfree", "memalign", "posix_memalign", "aligned_alloc",
                        "valloc", "pvalloc", "__libc_malloc", "__libc_free", "__libc_calloc", "__libc_realloc", "__libc_memalign",
                        "_int_malloc", "_int_free", "_int_free_*", "_int_realloc", "_int_memalign", "malloc_printerr",
                        "malloc_consolidate", "unlink_chunk", "tcache_*", "sysmalloc", "__malloc_*", "__free_*",
                        "operator new", "operator new[]", "operator delete", "operator delete[]", "je_*", "tc_*", "mi_*",
                        "tcmalloc::*", "__rust_alloc", "__rust_dealloc", "__rust_realloc", "__rdl_*", "__rg_*"])
        add(.skip, "sanitizer runtime: the report is about the caller",
            functions: ["__asan_*", "__asan::*", "__interceptor_*", "___interceptor_*", "__interception::*", "__sanitizer_*",
                        "__sanitizer::*", "__ubsan_*", "__ubsan::*", "__tsan_*", "__tsan::*", "__lsan_*", "__lsan::*", "__msan_*",
                        "__msan::*", "__hwasan_*", "__hwasan::*", "__dfsan_*", "__sancov_*"],
            modules: ["libclang_rt.*", "libasan.so*", "libubsan.so*", "libtsan.so*", "liblsan.so*", "libhwasan.so*", "libmsan.so*"])

        // Language runtimes' failure paths.
        add(.skip, "C++ termination and exception machinery",
            functions: ["std::terminate", "std::__terminate", "__cxxabiv1::__terminate", "__cxxabiv1::__unexpected",
                        "__cxxabiv1::*terminate*", "__cxa_throw", "__cxa_rethrow", "__cxa_call_terminate", "__cxa_call_unexpected",
                        "__cxa_pure_virtual", "__cxa_deleted_virtual", "__cxa_bad_cast", "__cxa_bad_typeid",
                        "__gnu_cxx::__verbose_terminate_handler", "__clang_call_terminate", "std::__throw_*", "__gxx_personality_v0",
                        "std::__1::__throw_*", "demangling_terminate_handler*"])
        add(.skip, "Swift runtime failure: the caller of the failed check is the bug",
            functions: ["Swift runtime failure*", "Swift._assertionFailure*", "Swift.assertionFailure*", "Swift._fatalErrorMessage*",
                        "Swift.fatalError*", "Swift.preconditionFailure*", "Swift.precondition*", "Swift._preconditionFailure*",
                        "Swift.assert*", "Swift._unimplementedInitializer*", "Swift._diagnoseUnexpectedNilOptional*",
                        "Swift._undefined*", "swift::fatalError*", "swift::swift_abortRetainUnowned*", "swift_unexpectedError",
                        "swift_deletedMethodError", "swift::warning*", "swift_reportError", "swift::swift_reportError*",
                        "swift_dynamicCastFailure", "swift::swift_dynamicCastFailure*", "swift_errorInMain",
                        "swift_abortRetainUnowned", "swift_abortDynamicReplacementEnabling", "swift::TargetMetadata*::*fatal*"])
        add(.skip, "Rust panic machinery: the caller of panic!/unwrap is the bug",
            functions: ["std::panicking::*", "core::panicking::*", "std::panic::*", "core::panic::*", "rust_panic",
                        "rust_begin_unwind", "__rust_start_panic", "__rust_panic_cleanup", "__rust_end_short_backtrace",
                        "std::sys_common::backtrace::__rust_end_short_backtrace", "std::sys::backtrace::__rust_end_short_backtrace",
                        "std::sys::pal::*::abort_internal", "std::sys::*::abort_internal", "std::process::abort",
                        "core::result::unwrap_failed", "core::option::unwrap_failed", "core::option::expect_failed",
                        "core::option::Option<T>::unwrap", "core::option::Option<T>::expect", "core::result::Result<T,E>::unwrap",
                        "core::result::Result<T,E>::expect", "panic_abort::*", "panic_unwind::*", "<std::panicking::*",
                        "core::cell::panic_already_borrowed", "core::cell::panic_already_mutably_borrowed",
                        "core::slice::index::*_fail", "core::slice::index::slice_*_fail*", "core::str::slice_error_fail*"])

        // Where a frame's code comes from: libraries are context, never the app's frames.
        add(.library, "system module (not the app's code)",
            modules: ["libc.so*", "libm.so*", "libpthread.so*", "libdl.so*", "librt.so*", "ld-linux*.so*", "ld-musl-*", "libc.musl-*",
                      "linux-vdso.so*", "linux-gate.so*", "libstdc++.so*", "libc++.so*", "libc++abi.so*", "libgcc_s.so*",
                      "libunwind.so*", "libz.so*", "libssl.so*", "libcrypto.so*", "libswiftCore.so", "libswift_*.so",
                      "libswiftGlibc.so", "libswiftDispatch.so", "libdispatch.so", "libBlocksRuntime.so", "libFoundation*.so",
                      "libart.so", "libandroid_runtime.so", "libbase.so", "libutils.so", "libcutils.so", "liblog.so",
                      "/lib/*", "/lib64/*", "/usr/lib/*", "/usr/lib64/*", "/system/*", "/apex/*", "/vendor/lib*"])
        add(.library, "standard library code (inlined into the app or not)",
            functions: ["std::*", "__gnu_cxx::*", "__cxxabiv1::*", "__gnu_debug::*", "__cxx11::*", "core::*", "alloc::*", "<core::*",
                        "<alloc::*", "<std::*", "Swift.*", "(extension in Swift)*", "Foundation.*", "Dispatch.*", "__libc_*",
                        "_start", "__libc_start_main", "__libc_start_call_main", "start_thread", "clone", "clone3", "__clone*",
                        "__GI___clone*", "thread_start"],
            files: ["/usr/include/*", "/usr/lib/gcc/*", "/usr/lib/llvm*", "*/include/c++/*", "/rustc/*", "*/libstdc++-v3/*",
                    "*/libcxx/*", "*/glibc-*", "./nptl/*", "./stdlib/*", "./string/*", "../sysdeps/*", "./libio/*", "./csu/*",
                    "./malloc/*", "./signal/*", "./assert/*"])
        return rules
    }()
}
