import SymUnwind

/// Unwind rows in Breakpad's `STACK CFI` language: postfix expressions over `$register` names,
/// `.cfa` and `.ra` (Breakpad `src/processor/cfi_frame_info.h`).
enum BreakpadCFI {
    /// Breakpad's register names (`DwarfCFIToModule::RegisterNames`) by ELF machine, indexed by
    /// DWARF register number; other numbers and machines are named `$<number>`.
    static func registerNames(machine: UInt16) -> [String] {
        switch machine {
        case 62:  // EM_X86_64 (System V psABI register numbering)
            return ["$rax", "$rdx", "$rcx", "$rbx", "$rsi", "$rdi", "$rbp", "$rsp",
                    "$r8", "$r9", "$r10", "$r11", "$r12", "$r13", "$r14", "$r15", "$rip"]
                + (0..<16).map { "$xmm\($0)" } + (0..<8).map { "$st\($0)" } + (0..<8).map { "$mm\($0)" }
                + ["$rflags", "$es", "$cs", "$ss", "$ds", "$fs", "$gs", "", "", "$fs.base", "$gs.base", "", "", "$tr", "$ldtr"]
        case 3:  // EM_386
            return ["$eax", "$ecx", "$edx", "$ebx", "$esp", "$ebp", "$esi", "$edi", "$eip", "$eflags", "$unused1"]
                + (0..<8).map { "$st\($0)" } + ["$unused2", "$unused3"] + (0..<8).map { "$xmm\($0)" }
                + (0..<8).map { "$mm\($0)" } + ["$fcw", "$fsw", "$mxcsr", "$es", "$cs", "$ss", "$ds", "$fs", "$gs", "$unused4", "$unused5", "$tr", "$ldtr"]
        case 183:  // EM_AARCH64
            return (0..<31).map { "x\($0)" } + ["sp"]
        case 40:  // EM_ARM
            return (0..<13).map { "r\($0)" } + ["sp", "lr", "pc"]
        default:
            return []
        }
    }

    /// Writes the `STACK CFI INIT` and `STACK CFI` records of `entries`, addresses less `base`.
    /// Rows whose CFA Breakpad cannot express (a DWARF expression other than register + offset
    /// and dereferences, such as the PLT's) are left out: the record before them ends there, so
    /// a walker falls back to other methods instead of using a rule that is wrong there.
    static func write(_ entries: [UnwindEntry], machine: UInt16, base: UInt64, into out: inout String) {
        let names = registerNames(machine: machine)
        let hasLinkRegister = machine == 183 || machine == 40  // AArch64, ARM
        func name(_ register: UInt16) -> String {
            Int(register) < names.count && !names[Int(register)].isEmpty ? names[Int(register)] : "$\(register)"
        }
        for entry in entries {
            // Runs of rows with an expressible CFA become one INIT record each.
            var runStart: Int?
            var index = 0
            while index <= entry.rows.count {
                let expressible = index < entry.rows.count && rules(entry.rows[index], entry: entry, linkRegister: hasLinkRegister, name: name) != nil
                if expressible, runStart == nil { runStart = index }
                if !expressible, let first = runStart {
                    let endAddress = index < entry.rows.count ? entry.rows[index].address : entry.end
                    writeRun(entry, rows: first..<index, end: endAddress, base: base, linkRegister: hasLinkRegister,
                             name: name, into: &out)
                    runStart = nil
                }
                index += 1
            }
        }
    }

    static func writeRun(_ entry: UnwindEntry, rows: Range<Int>, end: UInt64, base: UInt64, linkRegister: Bool,
                         name: (UInt16) -> String, into out: inout String) {
        var previous: [(String, String)] = []
        for index in rows {
            let row = entry.rows[index]
            guard let current = rules(row, entry: entry, linkRegister: linkRegister, name: name) else { return }
            if index == rows.lowerBound {
                out += "STACK CFI INIT \(hex(row.address &- base)) \(hex(end &- row.address))"
                for (register, rule) in current { out += " \(register): \(rule)" }
                out += "\n"
            } else {
                // Only what changed: Breakpad's records are deltas over the rules in force.
                let changes = current.filter { rule in !previous.contains { $0 == rule } }
                if !changes.isEmpty {
                    out += "STACK CFI \(hex(row.address &- base))"
                    for (register, rule) in changes { out += " \(register): \(rule)" }
                    out += "\n"
                }
            }
            previous = current
        }
    }

    /// The rules of a row as (name, postfix) pairs, `.cfa` first, then `.ra`, then registers by
    /// number; nil when the CFA cannot be expressed. Register rules that cannot be expressed (an
    /// undefined register, an untranslatable expression) are left out, as Breakpad does. On
    /// machines with a link register (ARM, AArch64) a return-address register without a rule
    /// still holds the return address (`.ra: x30`), as in Breakpad's and symbolic's output.
    static func rules(_ row: UnwindRow, entry: UnwindEntry, linkRegister: Bool,
                      name: (UInt16) -> String) -> [(String, String)]? {
        let cfa: String
        switch row.cfa {
        case .registerOffset(let register, let offset):
            cfa = "\(name(register)) \(offset) +"
        case .expression(let bytes):
            guard let text = postfix(bytes, name: name, initial: nil) else { return nil }
            cfa = text
        }
        var result = [(".cfa", cfa)]
        var others: [(String, String)] = []
        for entry_ in row.registers {
            let expressed = entry_.rule == .sameValue ? name(entry_.register) : rule(entry_.rule, name: name)
            guard let text = expressed else { continue }
            if entry_.register == entry.returnAddressRegister {
                result.append((".ra", text))
            } else {
                others.append((name(entry_.register), text))
            }
        }
        if linkRegister, row.rule(for: entry.returnAddressRegister) == nil {
            result.append((".ra", name(entry.returnAddressRegister)))
        }
        return result + others
    }

    static func rule(_ rule: RegisterRule, name: (UInt16) -> String) -> String? {
        switch rule {
        case .undefined: return nil
        case .sameValue: return nil  // the register itself: see `rules`
        case .offset(let offset): return ".cfa \(offset) + ^"
        case .valueOffset(let offset): return ".cfa \(offset) +"
        case .register(let register): return name(register)
        case .expression(let bytes): return postfix(bytes, name: name, initial: ".cfa").map { $0 + " ^" }
        case .valueExpression(let bytes): return postfix(bytes, name: name, initial: ".cfa")
        }
    }

    /// A DWARF expression as Breakpad postfix, when it uses only what postfix has: register plus
    /// offset, constants, `+ - *` and dereference. Nil otherwise (branches, comparisons,
    /// bit operations: the PLT's rule).
    /// `+ - *` only: DWARF's `div` is signed and Breakpad's `/` is not.
    static func postfix(_ bytes: [UInt8], name: (UInt16) -> String, initial: String?) -> String? {
        var stack: [String] = initial.map { [$0] } ?? []
        var index = 0
        func uleb() -> UInt64? {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                if shift < 64 { result |= UInt64(byte & 0x7f) << shift }
                if byte & 0x80 == 0 { return result }
                shift += 7
            }
            return nil
        }
        func sleb() -> Int64? {
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                if shift < 64 { result |= UInt64(byte & 0x7f) << shift }
                shift += 7
                if byte & 0x80 == 0 {
                    if shift < 64 && byte & 0x40 != 0 { result |= ~0 << shift }
                    return Int64(bitPattern: result)
                }
            }
            return nil
        }
        func binary(_ op: String) -> Bool {
            guard stack.count >= 2 else { return false }
            let right = stack.removeLast(), left = stack.removeLast()
            stack.append("\(left) \(right) \(op)")
            return true
        }
        while index < bytes.count {
            let op = bytes[index]
            index += 1
            switch op {
            case 0x30...0x4f: stack.append("\(op - 0x30)")
            case 0x70...0x8f:
                guard let offset = sleb() else { return nil }
                stack.append("\(name(UInt16(op - 0x70))) \(offset) +")
            case 0x92:
                guard let register = uleb(), register <= UInt64(CallFrameInfo.maximumRegister), let offset = sleb() else { return nil }
                stack.append("\(name(UInt16(register))) \(offset) +")
            case 0x10:
                guard let value = uleb(), value <= UInt64(Int64.max) else { return nil }
                stack.append("\(value)")
            case 0x11:
                guard let value = sleb() else { return nil }
                stack.append("\(value)")
            case 0x06:
                guard let top = stack.popLast() else { return nil }
                stack.append("\(top) ^")
            case 0x23:
                guard let value = uleb(), value <= UInt64(Int64.max), let top = stack.popLast() else { return nil }
                stack.append("\(top) \(value) +")
            case 0x22: guard binary("+") else { return nil }
            case 0x1c: guard binary("-") else { return nil }
            case 0x1e: guard binary("*") else { return nil }
            case 0x96: break
            default: return nil
            }
        }
        // A register rule's expression starts with the CFA pushed and need not use it.
        guard let top = stack.last, initial != nil || stack.count == 1 else { return nil }
        return top
    }

    static func hex(_ value: UInt64) -> String { String(value, radix: 16) }
}
