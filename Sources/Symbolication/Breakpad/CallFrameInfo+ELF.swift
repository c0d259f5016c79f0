import SymBytes
import SymELF
import SymUnwind

extension CallFrameInfo {
    /// The call-frame information of a module: `.eh_frame` from the binary (a separate debug
    /// file keeps it only as `NOBITS`), `.debug_frame` from whichever file has one with contents.
    public static func read(binary: ELFFile, debugFile: ELFFile? = nil) throws(FormatError) -> CallFrameInfo {
        var result = CallFrameInfo()
        try withSections(binary: binary, debugFile: debugFile) { ehFrame, debugFrame, target in
            result = read(ehFrame: ehFrame, debugFrame: debugFrame, target: target)
        }
        return result
    }

    /// Calls `body` with the module's `.eh_frame` and `.debug_frame` (as `read(binary:debugFile:)`
    /// finds them), valid during the call, and the target.
    public static func withSections(binary: ELFFile, debugFile: ELFFile? = nil,
                                    _ body: (Section?, Section?, Target) -> Void) throws(FormatError) {
        let target = Target(addressSize: binary.header.is64Bit ? 8 : 4, littleEndian: binary.header.isLittleEndian,
                            textAddress: binary.section(named: ".text")?.address,
                            dataAddress: binary.section(named: ".got")?.address)
        func contents(_ name: String) throws(FormatError) -> (SectionContents, UInt64)? {
            for file in [binary, debugFile].compactMap({ $0 }) {
                if let section = file.section(named: name), !section.isNoBits, section.size > 0 {
                    return (try file.contents(of: section), section.address)
                }
            }
            return nil
        }
        let ehFrame = try contents(".eh_frame")
        let debugFrame = try contents(".debug_frame")
        // The contents stay alive (and mapped) while the rows are built; the rows own copies.
        withExtendedLifetime((ehFrame, debugFrame)) {
            body(ehFrame.map { Section(bytes: $0.0.bytes, address: $0.1) },
                 debugFrame.map { Section(bytes: $0.0.bytes, address: $0.1) }, target)
        }
    }
}
