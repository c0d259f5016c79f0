/// One node of a demangled Itanium C++ name, as crashsym's own demangler builds it
/// (`ItaniumParser`). The node kinds, and how each prints, follow LLVM's `ItaniumDemangle.h`
/// (LLVM 21), so that the output is byte for byte what `llvm-nm -C`, `llvm-cxxfilt` and
/// `llvm-symbolizer` print. Nodes live in one array and refer to each other by index: no class, no
/// reference counting, and a hostile name's cycles (substitutions that point forward) are
/// indices that the printer guards against, not retain cycles.
enum ItaniumNode {
    /// `a, b, c` (a `sizeof...` argument list).
    case nodeArray(ItaniumNodeList)
    /// `name (.suffix)`: a clone suffix (`.cold`, `.llvm.123`).
    case dotSuffix(prefix: ItaniumNodeID, suffix: ItaniumText)
    /// `T ext<args>`: a vendor qualifier (`U3foo`).
    case vendorExtQualType(type: ItaniumNodeID, ext: ItaniumText, arguments: ItaniumNodeID)
    /// `T const volatile restrict`.
    case qualType(child: ItaniumNodeID, qualifiers: UInt8)
    /// `operator T`.
    case conversionOperatorType(ItaniumNodeID)
    /// `T complex`, `C auto`.
    case postfixQualifiedType(type: ItaniumNodeID, postfix: ItaniumText)
    /// A name or builtin type spelled as it is.
    case name(ItaniumText)
    /// `_BitInt(N)`.
    case bitIntType(size: ItaniumNodeID, signed: Bool)
    /// `struct N`, `union N`, `enum N`.
    case elaboratedTypeSpefType(kind: ItaniumText, child: ItaniumNodeID)
    /// `__underlying_type(T)` and other vendor transforms (`u…I…E`).
    case transformedType(transform: ItaniumText, base: ItaniumNodeID)
    /// `name[abi:tag]`.
    case abiTagAttr(base: ItaniumNodeID, tag: ItaniumText)
    /// ` [enable_if:…]`.
    case enableIfAttr(ItaniumNodeList)
    /// `T<Protocol>` (Objective-C).
    case objCProtoName(type: ItaniumNodeID, protocolName: ItaniumText)
    /// `T*`.
    case pointerType(ItaniumNodeID)
    /// `T&`, `T&&`.
    case referenceType(pointee: ItaniumNodeID, rvalue: Bool)
    /// `M C::*`.
    case pointerToMemberType(classType: ItaniumNodeID, memberType: ItaniumNodeID)
    /// `T [N]`.
    case arrayType(base: ItaniumNodeID, dimension: ItaniumNodeID)
    /// `R (params) cv ref noexcept`.
    case functionType(ItaniumFunctionType)
    /// `noexcept(e)`.
    case noexceptSpec(ItaniumNodeID)
    /// `throw(T…)`.
    case dynamicExceptionSpec(ItaniumNodeList)
    /// `this T` (C++23 explicit object parameter).
    case explicitObjectParameter(ItaniumNodeID)
    /// A function: return type, name, parameters, qualifiers, requires-clause.
    case functionEncoding(ItaniumFunctionEncoding)
    /// `operator"" _x`.
    case literalOperator(ItaniumNodeID)
    /// `vtable for T` and the other special names.
    case specialName(special: ItaniumText, child: ItaniumNodeID)
    /// `construction vtable for A-in-B`.
    case ctorVtableSpecialName(first: ItaniumNodeID, second: ItaniumNodeID)
    /// `Q::N`.
    case nestedName(qualifier: ItaniumNodeID, name: ItaniumNodeID)
    /// `Q::friend N`.
    case memberLikeFriendName(qualifier: ItaniumNodeID, name: ItaniumNodeID)
    /// A C++20 module name (`a.b`, `a:part`).
    case moduleName(parent: ItaniumNodeID, name: ItaniumNodeID, isPartition: Bool)
    /// `name@module`.
    case moduleEntity(module: ItaniumNodeID, name: ItaniumNodeID)
    /// `f()::name`.
    case localName(encoding: ItaniumNodeID, entity: ItaniumNodeID)
    /// `Q::N` in an unresolved name.
    case qualifiedName(qualifier: ItaniumNodeID, name: ItaniumNodeID)
    /// `T vector[N]`.
    case vectorType(base: ItaniumNodeID, dimension: ItaniumNodeID)
    /// `pixel vector[N]`.
    case pixelVectorType(ItaniumNodeID)
    /// `_FloatN`.
    case binaryFPType(ItaniumNodeID)
    /// `$T`, `$N1`, `$TT`: an invented template parameter name.
    case syntheticTemplateParamName(kind: UInt8, index: UInt32)
    /// A template argument with its parameter declaration (only the argument prints).
    case templateParamQualifiedArg(parameter: ItaniumNodeID, argument: ItaniumNodeID)
    /// `typename T`.
    case typeTemplateParamDecl(ItaniumNodeID)
    /// `C<U> T`.
    case constrainedTypeTemplateParamDecl(constraint: ItaniumNodeID, name: ItaniumNodeID)
    /// `int N`.
    case nonTypeTemplateParamDecl(name: ItaniumNodeID, type: ItaniumNodeID)
    /// `template<…> typename T`.
    case templateTemplateParamDecl(name: ItaniumNodeID, parameters: ItaniumNodeList, requires: ItaniumNodeID)
    /// `typename... T`.
    case templateParamPackDecl(ItaniumNodeID)
    /// An unexpanded parameter pack (a template parameter's pack argument).
    case parameterPack(ItaniumNodeList)
    /// `J…E`: a pack in a template argument list.
    case templateArgumentPack(ItaniumNodeList)
    /// `T...`: a pack expansion.
    case parameterPackExpansion(ItaniumNodeID)
    /// `<a, b>`.
    case templateArgs(arguments: ItaniumNodeList, requires: ItaniumNodeID)
    /// A template parameter of a conversion operator, resolved once the arguments are read.
    case forwardTemplateReference(index: UInt64, target: ItaniumNodeID)
    /// `name<args>`.
    case nameWithTemplateArgs(name: ItaniumNodeID, arguments: ItaniumNodeID)
    /// `::name`.
    case globalQualifiedName(ItaniumNodeID)
    /// `std::basic_string<char, …>` as a constructor's class.
    case expandedSpecialSubstitution(ItaniumSpecialSubstitution)
    /// `std::string` and the other abbreviations (`Ss`).
    case specialSubstitution(ItaniumSpecialSubstitution)
    /// A constructor or destructor name.
    case ctorDtorName(base: ItaniumNodeID, isDestructor: Bool)
    /// `~T`.
    case dtorName(ItaniumNodeID)
    /// `'unnamed1'`.
    case unnamedTypeName(ItaniumText)
    /// `'lambda1'<…>(params)`.
    case closureTypeName(ItaniumClosure)
    /// `[a, b]`.
    case structuredBindingName(ItaniumNodeList)
    /// `a + b`.
    case binaryExpr(lhs: ItaniumNodeID, infix: ItaniumText, rhs: ItaniumNodeID, precedence: ItaniumPrecedence)
    /// `a[b]`.
    case arraySubscriptExpr(ItaniumNodeID, ItaniumNodeID, precedence: ItaniumPrecedence)
    /// `a++`.
    case postfixExpr(child: ItaniumNodeID, operator: ItaniumText, precedence: ItaniumPrecedence)
    /// `a ? b : c`.
    case conditionalExpr(ItaniumNodeID, ItaniumNodeID, ItaniumNodeID, precedence: ItaniumPrecedence)
    /// `a.b`, `a->b`.
    case memberExpr(lhs: ItaniumNodeID, kind: ItaniumText, rhs: ItaniumNodeID, precedence: ItaniumPrecedence)
    /// `e.<T at offset N>`.
    case subobjectExpr(type: ItaniumNodeID, subExpr: ItaniumNodeID, offset: ItaniumText)
    /// `sizeof (e)`, `decltype(e)`.
    case enclosingExpr(prefix: ItaniumText, infix: ItaniumNodeID, precedence: ItaniumPrecedence)
    /// `static_cast<T>(e)`.
    case castExpr(kind: ItaniumText, to: ItaniumNodeID, from: ItaniumNodeID, precedence: ItaniumPrecedence)
    /// `sizeof...(T)`.
    case sizeofParamPackExpr(ItaniumNodeID)
    /// `f(a, b)`.
    case callExpr(callee: ItaniumNodeID, arguments: ItaniumNodeList, isParen: Bool, precedence: ItaniumPrecedence)
    /// `new (…) T(…)`.
    case newExpr(ItaniumNewExpr)
    /// `delete e`.
    case deleteExpr(ItaniumNodeID, isGlobal: Bool, isArray: Bool, precedence: ItaniumPrecedence)
    /// `-e`.
    case prefixExpr(prefix: ItaniumText, child: ItaniumNodeID, precedence: ItaniumPrecedence)
    /// `fp0`.
    case functionParam(ItaniumText)
    /// `(T)(e)`.
    case conversionExpr(type: ItaniumNodeID, expressions: ItaniumNodeList, precedence: ItaniumPrecedence)
    /// `(T)(e)` for a pointer-to-member conversion.
    case pointerToMemberConversionExpr(type: ItaniumNodeID, subExpr: ItaniumNodeID, precedence: ItaniumPrecedence)
    /// `T{a, b}`.
    case initListExpr(type: ItaniumNodeID, inits: ItaniumNodeList)
    /// `.a = e`, `[i] = e`.
    case bracedExpr(element: ItaniumNodeID, initializer: ItaniumNodeID, isArray: Bool)
    /// `[a ... b] = e`.
    case bracedRangeExpr(first: ItaniumNodeID, last: ItaniumNodeID, initializer: ItaniumNodeID)
    /// `(... + pack)`.
    case foldExpr(isLeftFold: Bool, operator: ItaniumText, pack: ItaniumNodeID, initializer: ItaniumNodeID)
    /// `throw e`.
    case throwExpr(ItaniumNodeID)
    /// `true`, `false`.
    case boolExpr(Bool)
    /// `"<T>"`.
    case stringLiteral(ItaniumNodeID)
    /// `[]…{...}`.
    case lambdaExpr(ItaniumNodeID)
    /// `(E)3`.
    case enumLiteral(type: ItaniumNodeID, integer: ItaniumText)
    /// `3u`, `(short)3`.
    case integerLiteral(type: ItaniumText, value: ItaniumText)
    /// `requires (…) { … }`.
    case requiresExpr(parameters: ItaniumNodeList, requirements: ItaniumNodeList)
    /// ` {e} noexcept -> C;`.
    case exprRequirement(expression: ItaniumNodeID, isNoexcept: Bool, typeConstraint: ItaniumNodeID)
    /// ` typename T;`.
    case typeRequirement(ItaniumNodeID)
    /// ` requires C;`.
    case nestedRequirement(ItaniumNodeID)
    /// A float, double or long double literal in hex (`%a`).
    case floatLiteral(ItaniumFloatKind, ItaniumText)
}

/// A node's index in its parser's node array; `ItaniumNodeID.none` is no node.
typealias ItaniumNodeID = Int32

extension ItaniumNodeID {
    /// No node (a null pointer in LLVM's tree).
    static let none: ItaniumNodeID = -1
}

/// A run of node indices in the parser's list pool.
struct ItaniumNodeList {
    var start: Int32
    var count: Int32
    static let empty = ItaniumNodeList(start: 0, count: 0)
}

/// Text a node prints: a range of the mangled name, or a fixed spelling.
enum ItaniumText {
    case input(start: Int32, count: Int32)
    case literal(StaticString)

    static let empty = ItaniumText.literal("")
}

/// The payload of `.functionType`.
struct ItaniumFunctionType {
    var returnType: ItaniumNodeID
    var parameters: ItaniumNodeList
    var qualifiers: UInt8
    var referenceQualifier: UInt8
    var exceptionSpec: ItaniumNodeID
}

/// The payload of `.functionEncoding`.
struct ItaniumFunctionEncoding {
    var returnType: ItaniumNodeID
    var name: ItaniumNodeID
    var parameters: ItaniumNodeList
    var attributes: ItaniumNodeID
    var requires: ItaniumNodeID
    var qualifiers: UInt8
    var referenceQualifier: UInt8
}

/// The payload of `.closureTypeName`.
struct ItaniumClosure {
    var templateParameters: ItaniumNodeList
    var requires1: ItaniumNodeID
    var parameters: ItaniumNodeList
    var requires2: ItaniumNodeID
    var count: ItaniumText
}

/// The payload of `.newExpr`.
struct ItaniumNewExpr {
    var expressions: ItaniumNodeList
    var type: ItaniumNodeID
    var inits: ItaniumNodeList
    var isGlobal: Bool
    var isArray: Bool
    var precedence: ItaniumPrecedence
}

/// The standard-library abbreviations (`Sa`, `Sb`, `Ss`, `Si`, `So`, `Sd`).
enum ItaniumSpecialSubstitution: UInt8 {
    case allocator, basicString, string, istream, ostream, iostream

    /// Whether the abbreviation names an instantiation (`std::string`), not a template.
    var isInstantiation: Bool { rawValue >= Self.string.rawValue }
}

/// The floating literal types (`Lf…E`, `Ld…E`, `Le…E`).
enum ItaniumFloatKind: UInt8 {
    case float, double, longDouble

    /// Hex digits in the mangling: the value's bytes, big-endian.
    var mangledSize: Int {
        switch self {
        case .float: 8
        case .double: 16
        case .longDouble: 20  // x86 80-bit long double, as LLVM built for x86-64 Linux reads it
        }
    }
}

/// Operator precedence, loosest last, for parenthesising expression operands (LLVM's `Node::Prec`).
enum ItaniumPrecedence: UInt8 {
    case primary, postfix, unary, cast, ptrMem, multiplicative, additive, shift, spaceship, relational,
         equality, and, xor, ior, andIf, orIf, conditional, assign, comma, `default`
}

/// A three-way cached property of a node: known yes, known no, or to be asked at print time
/// (a parameter pack or forward reference below it may change it).
enum ItaniumCache: UInt8 {
    case yes, no, unknown
}

/// The three cached properties of one node.
struct ItaniumCaches {
    var rhsComponent: ItaniumCache
    var array: ItaniumCache
    var function: ItaniumCache

    static let none = ItaniumCaches(rhsComponent: .no, array: .no, function: .no)
}

/// CV qualifier bits as the parser collects them.
enum ItaniumQualifier {
    static let const: UInt8 = 1
    static let volatile: UInt8 = 2
    static let restrict: UInt8 = 4
}
