/// One two-letter operator encoding of the Itanium ABI (`pl`, `cv`, `nw`…): how it parses in an
/// expression, its precedence and its spelling (LLVM `ItaniumDemangle.h`'s `OperatorInfo`).
struct ItaniumOperator {
    /// How the operator's operands are mangled.
    enum Kind: UInt8 {
        case prefix, postfix, binary, array, member, new, delete, call, cCast, conditional, nameOnly
        // Below: no `operator` name.
        case namedCast, ofIdOp
    }

    let encoding: (UInt8, UInt8)
    let kind: Kind
    /// Type operand (`ofIdOp`), array form (`new`, `delete`), parenthesised callee (`call`), or
    /// a nameable member operator (`member`).
    let flag: Bool
    let precedence: ItaniumPrecedence
    /// `operator+`, `sizeof `, `static_cast`.
    let name: StaticString
    /// The name without `operator` and a following space (`+`, `new`).
    let symbol: StaticString

    init(_ encoding: StaticString, _ kind: Kind, _ flag: Bool, _ precedence: ItaniumPrecedence,
         _ name: StaticString, _ symbol: StaticString) {
        self.encoding = (encoding.utf8Start[0], encoding.utf8Start[1])
        self.kind = kind
        self.flag = flag
        self.precedence = precedence
        self.name = name
        self.symbol = symbol
    }

    /// Every encoding, sorted by it.
    static let table: [ItaniumOperator] = [
        .init("aN", .binary, false, .assign, "operator&=", "&="),
        .init("aS", .binary, false, .assign, "operator=", "="),
        .init("aa", .binary, false, .andIf, "operator&&", "&&"),
        .init("ad", .prefix, false, .unary, "operator&", "&"),
        .init("an", .binary, false, .and, "operator&", "&"),
        .init("at", .ofIdOp, true, .unary, "alignof ", "alignof "),
        .init("aw", .nameOnly, false, .primary, "operator co_await", "co_await"),
        .init("az", .ofIdOp, false, .unary, "alignof ", "alignof "),
        .init("cc", .namedCast, false, .postfix, "const_cast", "const_cast"),
        .init("cl", .call, false, .postfix, "operator()", "()"),
        .init("cm", .binary, false, .comma, "operator,", ","),
        .init("co", .prefix, false, .unary, "operator~", "~"),
        .init("cp", .call, true, .postfix, "operator()", "()"),
        .init("cv", .cCast, false, .cast, "operator", ""),
        .init("dV", .binary, false, .assign, "operator/=", "/="),
        .init("da", .delete, true, .unary, "operator delete[]", "delete[]"),
        .init("dc", .namedCast, false, .postfix, "dynamic_cast", "dynamic_cast"),
        .init("de", .prefix, false, .unary, "operator*", "*"),
        .init("dl", .delete, false, .unary, "operator delete", "delete"),
        .init("ds", .member, false, .ptrMem, "operator.*", ".*"),
        .init("dt", .member, false, .postfix, "operator.", "."),
        .init("dv", .binary, false, .assign, "operator/", "/"),
        .init("eO", .binary, false, .assign, "operator^=", "^="),
        .init("eo", .binary, false, .xor, "operator^", "^"),
        .init("eq", .binary, false, .equality, "operator==", "=="),
        .init("ge", .binary, false, .relational, "operator>=", ">="),
        .init("gt", .binary, false, .relational, "operator>", ">"),
        .init("ix", .array, false, .postfix, "operator[]", "[]"),
        .init("lS", .binary, false, .assign, "operator<<=", "<<="),
        .init("le", .binary, false, .relational, "operator<=", "<="),
        .init("ls", .binary, false, .shift, "operator<<", "<<"),
        .init("lt", .binary, false, .relational, "operator<", "<"),
        .init("mI", .binary, false, .assign, "operator-=", "-="),
        .init("mL", .binary, false, .assign, "operator*=", "*="),
        .init("mi", .binary, false, .additive, "operator-", "-"),
        .init("ml", .binary, false, .multiplicative, "operator*", "*"),
        .init("mm", .postfix, false, .postfix, "operator--", "--"),
        .init("na", .new, true, .unary, "operator new[]", "new[]"),
        .init("ne", .binary, false, .equality, "operator!=", "!="),
        .init("ng", .prefix, false, .unary, "operator-", "-"),
        .init("nt", .prefix, false, .unary, "operator!", "!"),
        .init("nw", .new, false, .unary, "operator new", "new"),
        .init("oR", .binary, false, .assign, "operator|=", "|="),
        .init("oo", .binary, false, .orIf, "operator||", "||"),
        .init("or", .binary, false, .ior, "operator|", "|"),
        .init("pL", .binary, false, .assign, "operator+=", "+="),
        .init("pl", .binary, false, .additive, "operator+", "+"),
        .init("pm", .member, true, .ptrMem, "operator->*", "->*"),
        .init("pp", .postfix, false, .postfix, "operator++", "++"),
        .init("ps", .prefix, false, .unary, "operator+", "+"),
        .init("pt", .member, true, .postfix, "operator->", "->"),
        .init("qu", .conditional, false, .conditional, "operator?", "?"),
        .init("rM", .binary, false, .assign, "operator%=", "%="),
        .init("rS", .binary, false, .assign, "operator>>=", ">>="),
        .init("rc", .namedCast, false, .postfix, "reinterpret_cast", "reinterpret_cast"),
        .init("rm", .binary, false, .multiplicative, "operator%", "%"),
        .init("rs", .binary, false, .shift, "operator>>", ">>"),
        .init("sc", .namedCast, false, .postfix, "static_cast", "static_cast"),
        .init("ss", .binary, false, .spaceship, "operator<=>", "<=>"),
        .init("st", .ofIdOp, true, .unary, "sizeof ", "sizeof "),
        .init("sz", .ofIdOp, false, .unary, "sizeof ", "sizeof "),
        .init("te", .ofIdOp, false, .postfix, "typeid ", "typeid "),
        .init("ti", .ofIdOp, true, .postfix, "typeid ", "typeid "),
    ]

    /// The entry for the two bytes `a`, `b`, by binary search.
    static func find(_ a: UInt8, _ b: UInt8) -> ItaniumOperator? {
        var lower = 0
        var upper = table.count - 1
        while lower != upper {
            let middle = (lower + upper) / 2
            let entry = table[middle].encoding
            if entry.0 < a || (entry.0 == a && entry.1 < b) {
                lower = middle + 1
            } else {
                upper = middle
            }
        }
        let entry = table[lower].encoding
        return entry.0 == a && entry.1 == b ? table[lower] : nil
    }
}
