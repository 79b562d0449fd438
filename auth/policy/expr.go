package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// expr is one parsed check string of oslo.policy's language
// (oslo_policy/_parser.py, oslo_policy/_checks.py).
type expr interface {
	eval(e *Enforcer, target, creds Values, depth int) bool
}

type (
	trueCheck  struct{}
	falseCheck struct{}
	andCheck   []expr
	orCheck    []expr
	notCheck   struct{ x expr }
	ruleCheck  string
	// roleCheck is "role:<name>": a case-insensitive match in creds' roles.
	roleCheck string
	// genericCheck is "<kind>:<match>": match, %-substituted from the
	// target, against the creds value at the dotted path kind, or against
	// kind itself when it is a Python literal (lit, isLit: pyLiteral of
	// kind, read once when the rule is parsed).
	genericCheck struct {
		kind, match string
		lit         string
		isLit       bool
	}
)

func (trueCheck) eval(*Enforcer, Values, Values, int) bool  { return true }
func (falseCheck) eval(*Enforcer, Values, Values, int) bool { return false }

func (a andCheck) eval(e *Enforcer, t, c Values, d int) bool {
	for _, x := range a {
		if !x.eval(e, t, c, d) {
			return false
		}
	}
	return true
}

func (o orCheck) eval(e *Enforcer, t, c Values, d int) bool {
	for _, x := range o {
		if x.eval(e, t, c, d) {
			return true
		}
	}
	return false
}

func (n notCheck) eval(e *Enforcer, t, c Values, d int) bool { return !n.x.eval(e, t, c, d) }

// eval of rule:<name>: an unknown rule fails closed, as RuleCheck does; a
// cycle (refused when loading) is cut at a depth.
func (r ruleCheck) eval(e *Enforcer, t, c Values, d int) bool {
	x, ok := e.rules[string(r)]
	if !ok || d > 64 {
		return false
	}
	return x.eval(e, t, c, d+1)
}

func (r roleCheck) eval(_ *Enforcer, t, c Values, _ int) bool {
	m, ok := substitute(string(r), t)
	if !ok {
		return false
	}
	roles, _ := c["roles"].([]string)
	return slices.ContainsFunc(roles, func(role string) bool { return strings.EqualFold(role, m) })
}

func (g genericCheck) eval(_ *Enforcer, t, c Values, _ int) bool {
	m, ok := substitute(g.match, t)
	if !ok {
		return false
	}
	if g.isLit {
		return m == g.lit
	}
	// _find_in_dict: the creds are flat here, so a dotted kind names a
	// key only when the whole kind is one (never, in Ironic's rules).
	v, ok := c[g.kind]
	if !ok {
		return false
	}
	if l, isList := v.([]string); isList {
		return slices.Contains(l, m)
	}
	return m == pyStr(v)
}

// substitute applies Python's "%(key)s" % target: a missing key fails the
// check (oslo.policy catches the KeyError).
func substitute(s string, t Values) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "%(")
		if i < 0 {
			b.WriteString(s)
			return b.String(), true
		}
		j := strings.Index(s[i:], ")s")
		if j < 0 {
			b.WriteString(s)
			return b.String(), true
		}
		v, ok := t[s[i+2:i+j]]
		if !ok {
			return "", false
		}
		b.WriteString(s[:i])
		b.WriteString(pyStr(v))
		s = s[i+j+2:]
	}
}

// pyStr is Python's str() of a value of a policy dict.
func pyStr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		return x
	case []string:
		q := make([]string, len(x))
		for i, s := range x {
			q[i] = "'" + s + "'"
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// pyLiteral is str(ast.literal_eval(kind)) for the literals a check string
// can hold, and false for anything else.
func pyLiteral(kind string) (string, bool) {
	switch kind {
	case "True", "False", "None":
		return kind, true
	}
	if len(kind) >= 2 && (kind[0] == '\'' || kind[0] == '"') && kind[len(kind)-1] == kind[0] {
		return kind[1 : len(kind)-1], true
	}
	if i, err := strconv.ParseInt(kind, 10, 64); err == nil {
		return strconv.FormatInt(i, 10), true
	}
	return "", false
}

// parse reads a check string. oslo.policy fails closed on a string it
// cannot parse; the sidecar refuses it instead, naming it.
func parse(s string) (expr, error) {
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return trueCheck{}, nil // an empty rule always accepts
	}
	p := &parser{toks: toks}
	x, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.toks[p.i].text)
	}
	return x, nil
}

type token struct {
	kind string // "(", ")", "and", "or", "not", "check"
	text string
	x    expr
}

// tokenize splits as _parse_tokenize does: on whitespace, with leading and
// trailing parentheses cut off each word.
func tokenize(s string) ([]token, error) {
	var out []token
	for _, w := range strings.Fields(s) {
		clean := strings.TrimLeft(w, "(")
		for range len(w) - len(clean) {
			out = append(out, token{kind: "(", text: "("})
		}
		if clean == "" {
			continue
		}
		w = clean
		clean = strings.TrimRight(w, ")")
		trail := len(w) - len(clean)
		switch low := strings.ToLower(clean); low {
		case "and", "or", "not":
			out = append(out, token{kind: low, text: clean})
		case "":
		default:
			if len(w) >= 2 && (w[0] == '"' || w[0] == '\'') && w[len(w)-1] == w[0] {
				return nil, fmt.Errorf("a quoted string %s is not a check", w)
			}
			x, err := parseCheck(clean)
			if err != nil {
				return nil, err
			}
			out = append(out, token{kind: "check", text: clean, x: x})
		}
		for range trail {
			out = append(out, token{kind: ")", text: ")"})
		}
	}
	return out, nil
}

// parseCheck reads one check (_parse_check).
func parseCheck(s string) (expr, error) {
	switch s {
	case "!":
		return falseCheck{}, nil
	case "@":
		return trueCheck{}, nil
	}
	kind, match, ok := strings.Cut(s, ":")
	if !ok {
		return nil, fmt.Errorf("check %q is not kind:match", s)
	}
	switch kind {
	case "rule":
		return ruleCheck(match), nil
	case "role":
		return roleCheck(match), nil
	case "http", "https":
		return nil, fmt.Errorf("check %q calls a remote server, which the sidecar does not do", s)
	}
	g := genericCheck{kind: kind, match: match}
	g.lit, g.isLit = pyLiteral(kind)
	return g, nil
}

// parser: or := and ("or" and)*; and := unary ("and" unary)*;
// unary := "not" unary | "(" or ")" | check.
type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i].kind
	}
	return ""
}

func (p *parser) or() (expr, error) {
	return p.chain("or", p.and, func(l []expr) expr { return orCheck(l) })
}

func (p *parser) and() (expr, error) {
	return p.chain("and", p.unary, func(l []expr) expr { return andCheck(l) })
}

// chain reads operand (op operand)*: one operand alone is itself, two or
// more are joined (into an orCheck or an andCheck).
func (p *parser) chain(op string, operand func() (expr, error), join func([]expr) expr) (expr, error) {
	x, err := operand()
	if err != nil {
		return nil, err
	}
	list := []expr{x}
	for p.peek() == op {
		p.i++
		y, err := operand()
		if err != nil {
			return nil, err
		}
		list = append(list, y)
	}
	if len(list) == 1 {
		return x, nil
	}
	return join(list), nil
}

func (p *parser) unary() (expr, error) {
	switch p.peek() {
	case "not":
		p.i++
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return notCheck{x}, nil
	case "(":
		p.i++
		x, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.peek() != ")" {
			return nil, fmt.Errorf("missing )")
		}
		p.i++
		return x, nil
	case "check":
		t := p.toks[p.i]
		p.i++
		return t.x, nil
	case "":
		return nil, fmt.Errorf("unexpected end")
	}
	return nil, fmt.Errorf("unexpected %q", p.toks[p.i].text)
}
