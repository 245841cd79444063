package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The text form of a request and of an answer, for transports that talk
// to agents in prose (provider/command on stdin and stdout, provider/acp
// over the Agent Client Protocol) rather than through a structured-output
// API.

// RenderPrompt renders req as one text prompt for an agent: the
// system instructions, the conversation (role-labelled when there is more
// than one message, as in a repair round), then the output contract with
// the JSON Schema.
func RenderPrompt(req Request) string {
	var b strings.Builder
	if s := strings.TrimSpace(req.System); s != "" {
		b.WriteString(s)
		b.WriteString("\n\n")
	}
	if len(req.Messages) == 1 && (req.Messages[0].Role == "user" || req.Messages[0].Role == "") {
		b.WriteString(strings.TrimSpace(req.Messages[0].Content))
		b.WriteString("\n\n")
	} else {
		for _, m := range req.Messages {
			role := m.Role
			if role == "" {
				role = "user"
			}
			fmt.Fprintf(&b, "=== %s ===\n%s\n\n", strings.ToUpper(role), strings.TrimSpace(m.Content))
		}
	}
	b.WriteString("=== OUTPUT FORMAT ===\n")
	b.WriteString("Answer with one JSON object and nothing else: no prose, no Markdown code fences.\n")
	if schema := bytes.TrimSpace(req.Schema); len(schema) > 0 {
		var ind bytes.Buffer
		if json.Indent(&ind, schema, "", "  ") != nil {
			ind.Reset()
			ind.Write(schema)
		}
		name := req.SchemaName
		if name == "" {
			name = "answer"
		}
		fmt.Fprintf(&b, "The object must validate against this JSON Schema (%s):\n%s\n", name, ind.String())
	}
	return b.String()
}

// ExtractJSON finds the answer in an agent's output: the whole output when
// it is one JSON object or array, else the first ```json (or bare ```)
// fenced block holding a JSON object, else the first complete JSON object
// anywhere in the text.
func ExtractJSON(out []byte) (json.RawMessage, bool) {
	s := bytes.TrimSpace(out)
	if len(s) > 0 && (s[0] == '{' || s[0] == '[') && json.Valid(s) {
		return json.RawMessage(bytes.Clone(s)), true
	}
	if js, ok := fenced(s); ok {
		return js, true
	}
	const maxTries = 256
	rest := s
	for tries := 0; tries < maxTries; tries++ {
		i := bytes.IndexByte(rest, '{')
		if i < 0 {
			break
		}
		rest = rest[i:]
		var v json.RawMessage
		if json.NewDecoder(bytes.NewReader(rest)).Decode(&v) == nil {
			return v, true
		}
		rest = rest[1:]
	}
	return nil, false
}

// fenced returns the first Markdown code fence (``` or ```json) whose body
// is a JSON object.
func fenced(s []byte) (json.RawMessage, bool) {
	for {
		i := bytes.Index(s, []byte("```"))
		if i < 0 {
			return nil, false
		}
		s = s[i+3:]
		nl := bytes.IndexByte(s, '\n')
		if nl < 0 {
			return nil, false
		}
		lang := strings.ToLower(string(bytes.TrimSpace(s[:nl])))
		body := s[nl+1:]
		j := bytes.Index(body, []byte("```"))
		if j < 0 {
			return nil, false
		}
		blk := bytes.TrimSpace(body[:j])
		if (lang == "" || lang == "json") && len(blk) > 0 && blk[0] == '{' && json.Valid(blk) {
			return json.RawMessage(bytes.Clone(blk)), true
		}
		s = body[j+3:]
	}
}
