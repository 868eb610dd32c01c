package pins

import (
	"encoding/json"
	"fmt"
	"regexp"
	"unicode"
	"unicode/utf8"
)

// DefaultMaxDescription bounds a description (in characters) unless a
// server's tool_checks say otherwise.
const DefaultMaxDescription = 2048

// DefaultPatterns are the injection phrasings looked for in descriptions
// when a server's tool_checks name no patterns of their own: instructions
// that address the model rather than describe the tool.
var DefaultPatterns = []string{
	`(?i)\bignore\s+(all\s+|any\s+)?(the\s+)?(previous|prior|above|earlier)\s+(instructions|prompts|rules)`,
	`(?i)<\s*/?\s*(important|system|instructions?|secret)\s*>`,
	`(?i)\b(do\s+not|don'?t|never)\s+(tell|inform|mention|reveal|show)\b.{0,40}\buser\b`,
	`(?i)\b(read|send|upload|include|pass)\b.{0,60}(~/\.ssh|id_rsa|\.env\b|/etc/passwd|credentials|api[_ -]?keys?)`,
	`(?i)\b(you\s+must|always)\s+(first\s+)?(call|use|invoke)\s+this\s+tool\b.{0,40}\bbefore\b`,
}

// Check names, the values of the check label.
const (
	CheckUnicode = "invisible_unicode"
	CheckLength  = "description_length"
	CheckPattern = "pattern"
)

// Checks is one server's poisoning checks.
type Checks struct {
	Refuse         bool // handle a failing tool as unapproved; else report it only
	MaxDescription int  // characters; 0 = no bound
	Patterns       []*regexp.Regexp
}

// CompilePatterns compiles a server's patterns; nil means DefaultPatterns.
func CompilePatterns(src []string) ([]*regexp.Regexp, error) {
	if src == nil {
		src = DefaultPatterns
	}
	out := make([]*regexp.Regexp, 0, len(src))
	for _, s := range src {
		re, err := regexp.Compile(s)
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", s, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// Finding is one failed check of a definition.
type Finding struct {
	Check  string `json:"check"`
	Detail string `json:"detail"`
}

func (f Finding) String() string { return f.Check + ": " + f.Detail }

// texts are the strings of a definition the checks read: where they sit
// (name, title, description, a parameter's description) and what they say.
type text struct{ where, s string }

// Run checks a canonical definition and returns what failed.
func (c Checks) Run(canonical []byte) []Finding {
	var def struct {
		Name        string          `json:"name"`
		Title       string          `json:"title"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if err := json.Unmarshal(canonical, &def); err != nil {
		return []Finding{{Check: CheckPattern, Detail: "definition is not an object: " + err.Error()}}
	}
	texts := []text{{"name", def.Name}, {"title", def.Title}, {"description", def.Description}}
	if len(def.InputSchema) > 0 {
		var schema any
		if json.Unmarshal(def.InputSchema, &schema) == nil {
			texts = paramDescriptions(schema, "inputSchema", texts, 0)
		}
	}
	var out []Finding
	for _, t := range texts {
		if r, at, ok := hiddenRune(t.s); ok {
			out = append(out, Finding{CheckUnicode, fmt.Sprintf("%s has U+%04X at character %d", t.where, r, at)})
		}
	}
	if n := utf8.RuneCountInString(def.Description); c.MaxDescription > 0 && n > c.MaxDescription {
		out = append(out, Finding{CheckLength, fmt.Sprintf("description has %d characters (bound %d)", n, c.MaxDescription)})
	}
	for _, t := range texts[2:] { // descriptions: the tool's and its parameters'
		for _, re := range c.Patterns {
			if m := re.FindString(t.s); m != "" {
				out = append(out, Finding{CheckPattern, fmt.Sprintf("%s matches %q: %q", t.where, re.String(), clip(m, 80))})
			}
		}
	}
	return out
}

// paramDescriptions collects every "description" string of a JSON schema,
// nested properties and items included, to a bounded depth.
func paramDescriptions(v any, where string, out []text, depth int) []text {
	if depth > 32 {
		return out
	}
	switch n := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(n) {
			if s, ok := n[k].(string); ok && k == "description" {
				out = append(out, text{where + ".description", s})
				continue
			}
			out = paramDescriptions(n[k], where+"."+k, out, depth+1)
		}
	case []any:
		for i, e := range n {
			out = paramDescriptions(e, fmt.Sprintf("%s[%d]", where, i), out, depth+1)
		}
	}
	return out
}

// hiddenRune finds the first character a reader cannot see or that
// reorders what they see: format characters (zero-width spaces and
// joiners, bidirectional controls, the BOM, tag characters), other
// control characters but tab and newline, and private-use characters.
func hiddenRune(s string) (r rune, at int, ok bool) {
	i := 0
	for _, r := range s {
		i++
		switch {
		case r == '\t' || r == '\n' || r == '\r':
		case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Cc, r), unicode.Is(unicode.Co, r),
			r >= 0xE0000 && r <= 0xE007F, r == 0x115F || r == 0x1160 || r == 0x3164 || r == 0xFFA0:
			return r, i, true
		}
	}
	return 0, 0, false
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
