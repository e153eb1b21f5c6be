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
// Pointers evaluate to their address (Uint).
type Scalar struct {
	Kind Kind
	I    int64
	U    uint64
	F    float64
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
		return o.Scalar()
	case *Unary:
		if n.Op == "*" {
			o, err := evalObject(n, env)
			if err != nil {
				return Scalar{}, err
			}
			return o.Scalar()
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
		return env.Var(n.Name)
	case *Member:
		x, err := evalObject(n.X, env)
		if err != nil {
			return nil, err
		}
		return x.Member(n.Name, n.Arrow)
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
		return x.Index(idx)
	case *Unary:
		if n.Op == "*" {
			x, err := evalObject(n.X, env)
			if err != nil {
				return nil, err
			}
			return x.Deref()
		}
	}
	return nil, &TypeError{n.Pos(), fmt.Sprintf("%s is a value, not a variable, field or element", n)}
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
		case "==":
			return boolValue(a == b), nil
		case "!=":
			return boolValue(a != b), nil
		case "<":
			return boolValue(a < b), nil
		case "<=":
			return boolValue(a <= b), nil
		case ">":
			return boolValue(a > b), nil
		case ">=":
			return boolValue(a >= b), nil
		}
		return Scalar{}, &TypeError{n.Col, n.Op + " needs integers"}
	case x.Kind == Uint || y.Kind == Uint:
		a, b := asUint(x), asUint(y)
		if (n.Op == "/" || n.Op == "%") && b == 0 {
			return Scalar{}, fmt.Errorf("division by zero: %w", ErrMissing)
		}
		switch n.Op {
		case "+":
			return UintValue(a + b), nil
		case "-":
			return UintValue(a - b), nil
		case "*":
			return UintValue(a * b), nil
		case "/":
			return UintValue(a / b), nil
		case "%":
			return UintValue(a % b), nil
		case "&":
			return UintValue(a & b), nil
		case "|":
			return UintValue(a | b), nil
		case "^":
			return UintValue(a ^ b), nil
		case "<<":
			return UintValue(a << (b & 63)), nil
		case ">>":
			return UintValue(a >> (b & 63)), nil
		case "==":
			return boolValue(a == b), nil
		case "!=":
			return boolValue(a != b), nil
		case "<":
			return boolValue(a < b), nil
		case "<=":
			return boolValue(a <= b), nil
		case ">":
			return boolValue(a > b), nil
		case ">=":
			return boolValue(a >= b), nil
		}
	default:
		a, b := x.I, y.I
		if (n.Op == "/" || n.Op == "%") && b == 0 {
			return Scalar{}, fmt.Errorf("division by zero: %w", ErrMissing)
		}
		switch n.Op {
		case "+":
			return IntValue(a + b), nil
		case "-":
			return IntValue(a - b), nil
		case "*":
			return IntValue(a * b), nil
		case "/":
			return IntValue(a / b), nil
		case "%":
			return IntValue(a % b), nil
		case "&":
			return IntValue(a & b), nil
		case "|":
			return IntValue(a | b), nil
		case "^":
			return IntValue(a ^ b), nil
		case "<<":
			return IntValue(a << (uint64(b) & 63)), nil
		case ">>":
			return IntValue(a >> (uint64(b) & 63)), nil
		case "==":
			return boolValue(a == b), nil
		case "!=":
			return boolValue(a != b), nil
		case "<":
			return boolValue(a < b), nil
		case "<=":
			return boolValue(a <= b), nil
		case ">":
			return boolValue(a > b), nil
		case ">=":
			return boolValue(a >= b), nil
		}
	}
	return Scalar{}, &TypeError{n.Col, "unknown operator " + n.Op}
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
