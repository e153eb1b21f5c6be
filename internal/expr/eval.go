package expr

import (
	"errors"
	"fmt"
	"math"
)

// Kind of a Scalar.
type Kind uint8

const (
	Int Kind = iota
	Uint
	Float
)

// Scalar is an evaluated value: an integer, an unsigned integer or a float.
// Pointers evaluate to their address (Uint). A value of an enum type (read
// or cast to one) carries its enumerators, so that it can be shown by name;
// arithmetic drops them.
type Scalar struct {
	Kind Kind
	I    int64
	U    uint64
	F    float64
	Enum *Enum
}

// Enum is the enumerators of an enum type, in declaration order.
type Enum struct {
	Names  []string
	Values []int64
}

// Name returns the enumerator whose value is v.
func (e *Enum) Name(v int64) (string, bool) {
	if e == nil {
		return "", false
	}
	for i, x := range e.Values {
		if x == v {
			return e.Names[i], true
		}
	}
	return "", false
}

// IntValue, UintValue and FloatValue make scalars.
func IntValue(v int64) Scalar     { return Scalar{Kind: Int, I: v} }
func UintValue(v uint64) Scalar   { return Scalar{Kind: Uint, U: v} }
func FloatValue(v float64) Scalar { return Scalar{Kind: Float, F: v} }

// Float64 converts the scalar to a float64, for statistics.
func (s Scalar) Float64() float64 {
	switch s.Kind {
	case Int:
		return float64(s.I)
	case Uint:
		return float64(s.U)
	}
	return s.F
}

func (s Scalar) String() string {
	if n, ok := s.Enum.Name(s.I); ok && s.Kind == Int {
		return n
	}
	if n, ok := s.Enum.Name(int64(s.U)); ok && s.Kind == Uint {
		return n
	}
	switch s.Kind {
	case Int:
		return fmt.Sprint(s.I)
	case Uint:
		return fmt.Sprint(s.U)
	}
	return fmt.Sprint(s.F)
}

func (s Scalar) truth() bool {
	switch s.Kind {
	case Int:
		return s.I != 0
	case Uint:
		return s.U != 0
	}
	return s.F != 0
}

// Object is a value of the program: what a variable, a field, an element
// or a dereferenced pointer denotes. Implementations read program state
// (DWARF types and locations, registers, memory).
type Object interface {
	// Member selects a struct or union field; arrow is true for ->, which
	// goes through a pointer first.
	Member(name string, arrow bool) (Object, error)
	// Index selects an element of an array, or through a pointer.
	Index(i int64) (Object, error)
	// Deref follows a pointer.
	Deref() (Object, error)
	// Scalar reads a base, enum or pointer value.
	Scalar() (Scalar, error)
}

// Env resolves variable names in the frame being evaluated.
type Env interface {
	Var(name string) (Object, error)
}

// Type is a type of the program, named in a cast or in sizeof.
type Type interface {
	// Size is its size in bytes (-1: unknown).
	Size() int64
	// Convert makes a value of the type from a scalar, as a C cast does: a
	// pointer from an address, a narrower or wider integer, a float.
	Convert(Scalar) (Object, error)
}

// TypeEnv is an Env that also knows the program's types; casts and
// sizeof(TYPE) need one.
type TypeEnv interface {
	Env
	// Type resolves a C type name as written in the expression ("struct
	// list *", "list *", "unsigned long"); an unknown name is a TypeError.
	Type(name string) (Type, error)
}

// Addressable is an Object that can be in memory: &x needs one.
type Addressable interface {
	Object
	// Addr is a pointer to the object.
	Addr() (Object, error)
	// Size is the object's size in bytes.
	Size() int64
}

// ErrMissing is wrapped by errors meaning the value does not exist at this
// sample (a variable optimized out at the PC, unreadable memory, a null
// pointer): such samples are counted as missing, never guessed.
var ErrMissing = errors.New("value not available at this sample")

// TypeError is an error in the expression itself with respect to the
// program's types (no such field, not a pointer); it does not depend on
// the sample and is reported to the user once.
type TypeError struct {
	Col int
	Msg string
}

func (e *TypeError) Error() string { return fmt.Sprintf("column %d: %s", e.Col, e.Msg) }

// Eval evaluates n in env.
func Eval(n Node, env Env) (Scalar, error) {
	switch n := n.(type) {
	case *Number:
		if n.IsFloat {
			return FloatValue(n.Float), nil
		}
		return IntValue(n.Int), nil
	case *Ident, *Member, *Index:
		o, err := evalObject(n, env)
		if err != nil {
			return Scalar{}, err
		}
		v, err := o.Scalar()
		return v, atCol(n.Pos(), err)
	case *Cast, *Sizeof:
		if s, ok := n.(*Sizeof); ok {
			return evalSizeof(s, env)
		}
		o, err := evalObject(n, env)
		if err != nil {
			return Scalar{}, err
		}
		v, err := o.Scalar()
		return v, atCol(n.Pos(), err)
	case *Unary:
		if n.Op == "*" || n.Op == "&" {
			o, err := evalObject(n, env)
			if err != nil {
				return Scalar{}, err
			}
			v, err := o.Scalar()
			return v, atCol(n.Pos(), err)
		}
		x, err := Eval(n.X, env)
		if err != nil {
			return Scalar{}, err
		}
		return unary(n, x)
	case *Binary:
		return evalBinary(n, env)
	}
	return Scalar{}, &TypeError{n.Pos(), "cannot evaluate " + n.String()}
}

// evalObject evaluates an expression denoting a program object.
func evalObject(n Node, env Env) (Object, error) {
	switch n := n.(type) {
	case *Ident:
		o, err := env.Var(n.Name)
		return o, atCol(n.Col, err)
	case *Member:
		x, err := evalObject(n.X, env)
		if err != nil {
			return nil, err
		}
		o, err := x.Member(n.Name, n.Arrow)
		return o, atCol(n.Col, err)
	case *Index:
		x, err := evalObject(n.X, env)
		if err != nil {
			return nil, err
		}
		i, err := Eval(n.I, env)
		if err != nil {
			return nil, err
		}
		if i.Kind == Float {
			return nil, &TypeError{n.I.Pos(), "array index is not an integer"}
		}
		idx := i.I
		if i.Kind == Uint {
			idx = int64(i.U)
		}
		o, err := x.Index(idx)
		return o, atCol(n.Col, err)
	case *Unary:
		switch n.Op {
		case "*":
			x, err := evalObject(n.X, env)
			if err != nil {
				return nil, err
			}
			o, err := x.Deref()
			return o, atCol(n.Col, err)
		case "&":
			x, err := evalObject(n.X, env)
			if err != nil {
				return nil, err
			}
			a, ok := x.(Addressable)
			if !ok {
				return nil, &TypeError{n.Col, fmt.Sprintf("cannot take the address of %s", n.X)}
			}
			o, err := a.Addr()
			return o, atCol(n.Col, err)
		}
	case *Cast:
		t, err := lookupType(n.Col+1, n.Type, env)
		if err != nil {
			return nil, err
		}
		x, err := Eval(n.X, env)
		if err != nil {
			return nil, err
		}
		o, err := t.Convert(x)
		return o, atCol(n.Col, err)
	}
	return nil, &TypeError{n.Pos(), fmt.Sprintf("%s is a value, not a variable, field or element", n)}
}

// atCol gives a TypeError from the program's side the column of the node
// it arose at.
func atCol(col int, err error) error {
	var e *TypeError
	if errors.As(err, &e) && e.Col == 0 {
		e.Col = col
	}
	return err
}

func lookupType(col int, name string, env Env) (Type, error) {
	te, ok := env.(TypeEnv)
	if !ok {
		return nil, &TypeError{col, fmt.Sprintf("type %s: the program's types are not known here", name)}
	}
	t, err := te.Type(name)
	if err != nil {
		var e *TypeError
		if errors.As(err, &e) && e.Col == 0 {
			e.Col = col
		}
		return nil, err
	}
	return t, nil
}

func evalSizeof(n *Sizeof, env Env) (Scalar, error) {
	if n.Type != "" {
		t, err := lookupType(n.Col+7, n.Type, env)
		if err != nil {
			return Scalar{}, err
		}
		return sizeValue(n, t.Size())
	}
	if n.Ambiguous {
		id := n.X.(*Ident)
		if te, ok := env.(TypeEnv); ok {
			if _, err := env.Var(id.Name); err != nil {
				if t, terr := te.Type(id.Name); terr == nil {
					return sizeValue(n, t.Size())
				}
			}
		}
	}
	x, err := evalObject(n.X, env)
	if err != nil {
		return Scalar{}, err
	}
	a, ok := x.(Addressable)
	if !ok {
		return Scalar{}, &TypeError{n.Col, fmt.Sprintf("the size of %s is not known", n.X)}
	}
	return sizeValue(n, a.Size())
}

func sizeValue(n *Sizeof, size int64) (Scalar, error) {
	if size < 0 {
		return Scalar{}, &TypeError{n.Col, "sizeof a type of unknown size"}
	}
	return UintValue(uint64(size)), nil
}

func unary(n *Unary, x Scalar) (Scalar, error) {
	switch n.Op {
	case "-":
		switch x.Kind {
		case Int:
			return IntValue(-x.I), nil
		case Uint:
			return UintValue(-x.U), nil
		}
		return FloatValue(-x.F), nil
	case "+":
		return x, nil
	case "!":
		if x.truth() {
			return IntValue(0), nil
		}
		return IntValue(1), nil
	case "~":
		switch x.Kind {
		case Int:
			return IntValue(^x.I), nil
		case Uint:
			return UintValue(^x.U), nil
		}
		return Scalar{}, &TypeError{n.Col, "~ needs an integer"}
	}
	return Scalar{}, &TypeError{n.Col, "unknown operator " + n.Op}
}

func evalBinary(n *Binary, env Env) (Scalar, error) {
	x, err := Eval(n.X, env)
	if err != nil {
		return Scalar{}, err
	}
	switch n.Op { // short-circuit, as C
	case "&&":
		if !x.truth() {
			return IntValue(0), nil
		}
	case "||":
		if x.truth() {
			return IntValue(1), nil
		}
	}
	y, err := Eval(n.Y, env)
	if err != nil {
		return Scalar{}, err
	}
	switch n.Op {
	case "&&", "||":
		return boolValue(y.truth()), nil
	}
	// The usual arithmetic conversions, simplified: float if either is a
	// float, else unsigned if either is unsigned, else signed.
	switch {
	case x.Kind == Float || y.Kind == Float:
		a, b := x.Float64(), y.Float64()
		if v, ok := compare(n.Op, a, b); ok {
			return v, nil
		}
		switch n.Op {
		case "+":
			return FloatValue(a + b), nil
		case "-":
			return FloatValue(a - b), nil
		case "*":
			return FloatValue(a * b), nil
		case "/":
			return FloatValue(a / b), nil
		case "%":
			return FloatValue(math.Mod(a, b)), nil
		case "&", "|", "^", "<<", ">>":
			return Scalar{}, &TypeError{n.Col, n.Op + " needs integers"}
		}
	case x.Kind == Uint || y.Kind == Uint:
		return integer(n, asUint(x), asUint(y), UintValue)
	default:
		return integer(n, x.I, y.I, IntValue)
	}
	return Scalar{}, &TypeError{n.Col, "unknown operator " + n.Op}
}

// integer applies an arithmetic, bitwise or comparison operator to two
// integers of one signedness, as C does after its conversions (shift
// counts taken modulo 64); value makes the result of that signedness.
func integer[T int64 | uint64](n *Binary, a, b T, value func(T) Scalar) (Scalar, error) {
	if v, ok := compare(n.Op, a, b); ok {
		return v, nil
	}
	if (n.Op == "/" || n.Op == "%") && b == 0 {
		return Scalar{}, fmt.Errorf("division by zero: %w", ErrMissing)
	}
	switch n.Op {
	case "+":
		return value(a + b), nil
	case "-":
		return value(a - b), nil
	case "*":
		return value(a * b), nil
	case "/":
		return value(a / b), nil
	case "%":
		return value(a % b), nil
	case "&":
		return value(a & b), nil
	case "|":
		return value(a | b), nil
	case "^":
		return value(a ^ b), nil
	case "<<":
		return value(a << (uint64(b) & 63)), nil
	case ">>":
		return value(a >> (uint64(b) & 63)), nil
	}
	return Scalar{}, &TypeError{n.Col, "unknown operator " + n.Op}
}

// compare applies a comparison operator (1 when true, 0 when false); ok
// is false for any other operator.
func compare[T int64 | uint64 | float64](op string, a, b T) (v Scalar, ok bool) {
	switch op {
	case "==":
		return boolValue(a == b), true
	case "!=":
		return boolValue(a != b), true
	case "<":
		return boolValue(a < b), true
	case "<=":
		return boolValue(a <= b), true
	case ">":
		return boolValue(a > b), true
	case ">=":
		return boolValue(a >= b), true
	}
	return Scalar{}, false
}

func asUint(s Scalar) uint64 {
	if s.Kind == Int {
		return uint64(s.I)
	}
	return s.U
}

func boolValue(b bool) Scalar {
	if b {
		return IntValue(1)
	}
	return IntValue(0)
}
