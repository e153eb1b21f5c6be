package elfx

// DWARF expression opcodes (DW_OP_*: DWARF 5 §2.5, §2.6 and the GNU
// extensions GCC emits).
const (
	OpAddr              = 0x03
	OpDeref             = 0x06
	OpConst1u           = 0x08
	OpConst1s           = 0x09
	OpConst2u           = 0x0a
	OpConst2s           = 0x0b
	OpConst4u           = 0x0c
	OpConst4s           = 0x0d
	OpConst8u           = 0x0e
	OpConst8s           = 0x0f
	OpConstu            = 0x10
	OpConsts            = 0x11
	OpDup               = 0x12
	OpDrop              = 0x13
	OpOver              = 0x14
	OpPick              = 0x15
	OpSwap              = 0x16
	OpRot               = 0x17
	OpXderef            = 0x18
	OpAbs               = 0x19
	OpAnd               = 0x1a
	OpDiv               = 0x1b
	OpMinus             = 0x1c
	OpMod               = 0x1d
	OpMul               = 0x1e
	OpNeg               = 0x1f
	OpNot               = 0x20
	OpOr                = 0x21
	OpPlus              = 0x22
	OpPlusUconst        = 0x23
	OpShl               = 0x24
	OpShr               = 0x25
	OpShra              = 0x26
	OpXor               = 0x27
	OpBra               = 0x28
	OpEq                = 0x29
	OpGe                = 0x2a
	OpGt                = 0x2b
	OpLe                = 0x2c
	OpLt                = 0x2d
	OpNe                = 0x2e
	OpSkip              = 0x2f
	OpLit0              = 0x30
	OpLit31             = 0x4f
	OpReg0              = 0x50
	OpReg31             = 0x6f
	OpBreg0             = 0x70
	OpBreg31            = 0x8f
	OpRegx              = 0x90
	OpFbreg             = 0x91
	OpBregx             = 0x92
	OpPiece             = 0x93
	OpDerefSize         = 0x94
	OpXderefSize        = 0x95
	OpNop               = 0x96
	OpPushObjectAddress = 0x97
	OpCall2             = 0x98
	OpCall4             = 0x99
	OpCallRef           = 0x9a
	OpFormTLSAddress    = 0x9b
	OpCallFrameCFA      = 0x9c
	OpBitPiece          = 0x9d
	OpImplicitValue     = 0x9e
	OpStackValue        = 0x9f
	OpImplicitPointer   = 0xa0
	OpAddrx             = 0xa1
	OpConstx            = 0xa2
	OpEntryValue        = 0xa3
	OpConstType         = 0xa4
	OpRegvalType        = 0xa5
	OpDerefType         = 0xa6
	OpXderefType        = 0xa7
	OpConvert           = 0xa8
	OpReinterpret       = 0xa9

	OpGNUPushTLSAddress  = 0xe0
	OpGNUUninit          = 0xf0
	OpGNUEncodedAddr     = 0xf1
	OpGNUImplicitPointer = 0xf2
	OpGNUEntryValue      = 0xf3
	OpGNUConstType       = 0xf4
	OpGNURegvalType      = 0xf5
	OpGNUDerefType       = 0xf6
	OpGNUConvert         = 0xf7
	OpGNUReinterpret     = 0xf9
	OpGNUParameterRef    = 0xfa
	OpGNUAddrIndex       = 0xfb
	OpGNUConstIndex      = 0xfc
	OpGNUVariableValue   = 0xfd
)

// opNames is an array, not a map: a map literal is built at every start of
// the program (0.05 ms), an array is data.
var opNames = [256]string{
	OpAddr: "addr", OpDeref: "deref", OpConst1u: "const1u", OpConst1s: "const1s",
	OpConst2u: "const2u", OpConst2s: "const2s", OpConst4u: "const4u", OpConst4s: "const4s",
	OpConst8u: "const8u", OpConst8s: "const8s", OpConstu: "constu", OpConsts: "consts",
	OpDup: "dup", OpDrop: "drop", OpOver: "over", OpPick: "pick", OpSwap: "swap", OpRot: "rot",
	OpXderef: "xderef", OpAbs: "abs", OpAnd: "and", OpDiv: "div", OpMinus: "minus", OpMod: "mod",
	OpMul: "mul", OpNeg: "neg", OpNot: "not", OpOr: "or", OpPlus: "plus", OpPlusUconst: "plus_uconst",
	OpShl: "shl", OpShr: "shr", OpShra: "shra", OpXor: "xor", OpBra: "bra", OpEq: "eq", OpGe: "ge",
	OpGt: "gt", OpLe: "le", OpLt: "lt", OpNe: "ne", OpSkip: "skip", OpRegx: "regx", OpFbreg: "fbreg",
	OpBregx: "bregx", OpPiece: "piece", OpDerefSize: "deref_size", OpXderefSize: "xderef_size",
	OpNop: "nop", OpPushObjectAddress: "push_object_address", OpCall2: "call2", OpCall4: "call4",
	OpCallRef: "call_ref", OpFormTLSAddress: "form_tls_address", OpCallFrameCFA: "call_frame_cfa",
	OpBitPiece: "bit_piece", OpImplicitValue: "implicit_value", OpStackValue: "stack_value",
	OpImplicitPointer: "implicit_pointer", OpAddrx: "addrx", OpConstx: "constx",
	OpEntryValue: "entry_value", OpConstType: "const_type", OpRegvalType: "regval_type",
	OpDerefType: "deref_type", OpXderefType: "xderef_type", OpConvert: "convert",
	OpReinterpret: "reinterpret", OpGNUPushTLSAddress: "GNU_push_tls_address",
	OpGNUUninit: "GNU_uninit", OpGNUEncodedAddr: "GNU_encoded_addr",
	OpGNUImplicitPointer: "GNU_implicit_pointer", OpGNUEntryValue: "GNU_entry_value",
	OpGNUConstType: "GNU_const_type", OpGNURegvalType: "GNU_regval_type",
	OpGNUDerefType: "GNU_deref_type", OpGNUConvert: "GNU_convert",
	OpGNUReinterpret: "GNU_reinterpret", OpGNUParameterRef: "GNU_parameter_ref",
	OpGNUAddrIndex: "GNU_addr_index", OpGNUConstIndex: "GNU_const_index",
	OpGNUVariableValue: "GNU_variable_value",
}

// OpName returns the name of DWARF expression opcode op without its DW_OP_
// prefix ("plus_uconst", "GNU_entry_value"), "" for an unknown opcode; the
// ranges lit0–31, reg0–31 and breg0–31 are named by their first member.
func OpName(op byte) string { return opNames[op] }

// Call frame instructions (DW_CFA_*: DWARF 5 §6.4.2 and the GNU
// extensions). The first three carry an operand in their low 6 bits: test
// them with op&CFAHighMask.
const (
	CFAHighMask = 0xc0

	CFAAdvanceLoc = 0x40
	CFAOffset     = 0x80
	CFARestore    = 0xc0

	CFANop              = 0x00
	CFASetLoc           = 0x01
	CFAAdvanceLoc1      = 0x02
	CFAAdvanceLoc2      = 0x03
	CFAAdvanceLoc4      = 0x04
	CFAOffsetExtended   = 0x05
	CFARestoreExtended  = 0x06
	CFAUndefined        = 0x07
	CFASameValue        = 0x08
	CFARegister         = 0x09
	CFARememberState    = 0x0a
	CFARestoreState     = 0x0b
	CFADefCFA           = 0x0c
	CFADefCFARegister   = 0x0d
	CFADefCFAOffset     = 0x0e
	CFADefCFAExpression = 0x0f
	CFAExpression       = 0x10
	CFAOffsetExtendedSf = 0x11
	CFADefCFASf         = 0x12
	CFADefCFAOffsetSf   = 0x13
	CFAValOffset        = 0x14
	CFAValOffsetSf      = 0x15
	CFAValExpression    = 0x16

	CFAGNUArgsSize               = 0x2e
	CFAGNUNegativeOffsetExtended = 0x2f
)
