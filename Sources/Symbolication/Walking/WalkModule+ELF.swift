import SymBytes
import SymELF
import SymTable
import SymUnwind

extension WalkModule {
    /// A module mapped at `start..<end` for the walker, its rules and bias from `binary` (the
    /// ELF file of its build): rows found on demand through `.eh_frame_hdr` when the file has
    /// one (`wholeCFI` false), else every FDE of `.eh_frame` and `.debug_frame` read first.
    /// Without a binary, the walker has only frame pointers and scanning there.
    public init(start: UInt64, end: UInt64, binary: ELFFile?, wholeCFI: Bool = false) {
        guard let binary, let layout = ModuleLayout(binary) else {
            self.init(start: start, end: end, bias: 0, cfi: nil)
            return
        }
        let bias = start &- layout.mappingBase
        if !wholeCFI, let rules = Self.rulesOnDemand(binary) {
            self.init(start: start, end: end, bias: bias, cfi: nil, rules: rules, code: Self.code(of: binary))
        } else {
            self.init(start: start, end: end, bias: bias, cfi: try? CallFrameInfo.read(binary: binary), code: Self.code(of: binary))
        }
    }

    /// The code of `binary` (the scan's check that a return address follows a call: cores
    /// rarely keep the code pages, the file on disk has them).
    static func code(of binary: ELFFile) -> @Sendable (UInt64, Int) -> CodeBytes {
        { address, count in
            switch binary.loadedCode(at: address, count: count) {
            case .code(let bytes): .bytes(bytes)
            case .notCode: .notCode
            case .unknown: .unknown
            }
        }
    }

    /// A lookup of one address's rules through `binary`'s `.eh_frame_hdr`, or nil when it has
    /// no usable one (the whole CFI is read then).
    static func rulesOnDemand(_ binary: ELFFile) -> (@Sendable (UInt64) -> (entry: UnwindEntry, row: UnwindRow)?)? {
        guard let frame = binary.section(named: ".eh_frame"), !frame.isNoBits, frame.size > 0,
              let header = binary.section(named: ".eh_frame_hdr"), !header.isNoBits, header.size > 0,
              let frameBytes = try? binary.contents(of: frame), let headerBytes = try? binary.contents(of: header) else { return nil }
        let target = CallFrameInfo.Target(addressSize: binary.header.is64Bit ? 8 : 4, littleEndian: binary.header.isLittleEndian,
                                          textAddress: binary.section(named: ".text")?.address,
                                          dataAddress: binary.section(named: ".got")?.address)
        let frameAddress = frame.address, headerAddress = header.address
        // A header that cannot be read (no search table) falls back to reading everything.
        guard (try? EHFrameHeader(CallFrameInfo.Section(bytes: headerBytes.bytes, address: headerAddress), target: target)) != nil
        else { return nil }
        return { address in
            // The contents (and the file's mapping) live as long as this closure.
            withExtendedLifetime((frameBytes, headerBytes)) {
                guard let entry = try? CallFrameInfo.entry(at: address,
                                                           ehFrame: CallFrameInfo.Section(bytes: frameBytes.bytes, address: frameAddress),
                                                           header: CallFrameInfo.Section(bytes: headerBytes.bytes, address: headerAddress),
                                                           target: target),
                      let row = entry.row(at: address) else { return nil }
                return (entry, row)
            }
        }
    }
}
