package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/diffpalhq/diffpal/internal/qa"
)

// ModelPolicy is a loaded model-policy file: the selection the server
// reports and whether sessions hand out {mode: host_default} policies.
type ModelPolicy struct {
	Selection   qa.ModelSelection
	HostDefault bool
}

// ParseModelPolicy reads a model-policy file. The format is the anchor's
// closed object (provider, four stage models, four stage reasoning levels;
// see qa.ParseModelSelection) plus one optional key, "mode":
//
//	{"mode": "host_default"}                      hosts pick their own models
//	{"mode": "host_default", "provider": ..., …}  same, selection still reported
//	{"mode": "configured", "provider": ..., …}    same as omitting mode
//
// With mode host_default the selection keys may be omitted; the built-in
// default selection is then reported by get_qa_orchestration_model_policy.
// The four *_reasoning keys may always be omitted: the anchor's defaults
// apply (qa.ParseModelSelection).
// Errors start with "invalid model policy".
func ParseModelPolicy(data []byte) (ModelPolicy, error) {
	var keys map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&keys); err != nil || keys == nil {
		detail := "want a JSON object"
		if err != nil {
			detail = err.Error()
		}
		return ModelPolicy{}, &qa.Error{Code: qa.CodeInvalidModelPolicy, Detail: detail}
	}
	if dec.More() {
		return ModelPolicy{}, &qa.Error{Code: qa.CodeInvalidModelPolicy, Detail: "trailing data after JSON value"}
	}
	var p ModelPolicy
	if raw, ok := keys["mode"]; ok {
		var mode string
		if err := json.Unmarshal(raw, &mode); err != nil ||
			(mode != qa.PolicyModeConfigured && mode != qa.PolicyModeHostDefault) {
			return ModelPolicy{}, &qa.Error{Code: qa.CodeInvalidModelPolicy, Field: "mode",
				Detail: fmt.Sprintf("must be %q or %q", qa.PolicyModeConfigured, qa.PolicyModeHostDefault)}
		}
		p.HostDefault = mode == qa.PolicyModeHostDefault
		delete(keys, "mode")
	}
	if p.HostDefault && len(keys) == 0 {
		p.Selection = qa.DefaultModelSelection()
		return p, nil
	}
	rest, err := json.Marshal(keys)
	if err != nil {
		return ModelPolicy{}, &qa.Error{Code: qa.CodeInvalidModelPolicy, Detail: err.Error()}
	}
	sel, err := qa.ParseModelSelection(rest)
	if err != nil {
		return ModelPolicy{}, err
	}
	p.Selection = sel
	return p, nil
}
