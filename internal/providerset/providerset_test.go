package providerset

import (
	"errors"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/config"
	"github.com/diffpalhq/diffpal/internal/provider"
	"github.com/diffpalhq/diffpal/internal/provider/builtin"
	"github.com/diffpalhq/diffpal/internal/provider/llm"
	"github.com/diffpalhq/diffpal/internal/qa"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

func TestBuildDefaultIsBuiltin(t *testing.T) {
	set, err := Build(Choice{NoCache: true}, &config.Config{Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := set.Provider.(*builtin.Builtin); !ok || set.Deep != nil || set.Synthesis != nil {
		t.Errorf("set = %+v", set)
	}
}

// A model provider verifies its own review unless the config routes the
// deep pass or synthesis elsewhere; routed profiles go through a Router.
func TestBuildRoutesAndVerifiers(t *testing.T) {
	cfg, err := config.Parse([]byte(`version: v1
provider: o
providers:
  o: {type: openai, model: m, base_url: "http://127.0.0.1:1/v1", api_key_env: DP_KEY}
  a: {type: anthropic, model: m2, base_url: "http://127.0.0.1:1", api_key_env: DP_KEY}
stages:
  security_reviewer: builtin
  synthesis: a
`))
	if err != nil {
		t.Fatal(err)
	}
	set, err := Build(Choice{Name: "o", NoCache: true, Getenv: env(map[string]string{"DP_KEY": "sk-test"})}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := set.Provider.(*provider.Router)
	if !ok {
		t.Fatalf("provider = %T, want a router", set.Provider)
	}
	if _, ok := r.Profiles[qa.ProfileSecurityReviewer].(*builtin.Builtin); !ok {
		t.Errorf("security_reviewer routed to %T", r.Profiles[qa.ProfileSecurityReviewer])
	}
	if set.Deep != r.Default.(provider.Verifier) || set.Synthesis == set.Deep {
		t.Errorf("deep = %v (want the default model), synthesis = %v (want a)", set.Deep, set.Synthesis)
	}
	if set.KeyEnvs["o"] != "DP_KEY" || set.KeyEnvs["a"] != "DP_KEY" {
		t.Errorf("key variables = %v", set.KeyEnvs)
	}
	if _, ok := set.Synthesis.(*llm.Provider); !ok {
		t.Errorf("synthesis = %T", set.Synthesis)
	}
}

func TestBuildErrorsAreUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name, cfg, want string
		choice          Choice
	}{
		{"unknown provider", "version: v1\n", `unknown provider "nope"`, Choice{Name: "nope"}},
		{"bare openai without a model", "version: v1\n", "--provider openai needs --model", Choice{Name: "openai"}},
		{"command without --command", "version: v1\n", "--provider command needs --command", Choice{Name: "command"}},
		{"builtin cannot verify", "version: v1\nstages: {deep_review: builtin}\n", "stages.deep_review: provider \"builtin\" cannot verify", Choice{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			tc.choice.NoCache = true
			_, err = Build(tc.choice, cfg)
			var pe *Error
			if !errors.As(err, &pe) || pe.Auth || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a usage *Error containing %q", err, tc.want)
			}
		})
	}
}

func TestKeyEnvAndBaseURL(t *testing.T) {
	if KeyEnvOf(config.Provider{Type: "openai"}) != "OPENAI_API_KEY" || KeyEnvOf(config.Provider{Type: "anthropic", APIKeyEnv: "X"}) != "X" {
		t.Error("key variable resolution")
	}
	if BaseURLOf(config.Provider{Type: "openai", BaseURL: "http://h/v1"}) != "http://h/v1" {
		t.Error("configured base URL must win")
	}
}
