package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diffpalhq/diffpal/internal/git/gittest"
)

// TestDoctorOnline checks reachability against loopback servers that
// answer like the real APIs' model listings: the key goes in the vendor's
// header, a rejected key is an error, and the key never reaches output.
func TestDoctorOnline(t *testing.T) {
	var gotAuth, gotKey, gotVersion string
	openai := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"object":"list","data":[]}`))
	}))
	defer openai.Close()
	anthropic := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey, gotVersion = r.Header.Get("x-api-key"), r.Header.Get("anthropic-version")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
	}))
	defer anthropic.Close()

	repo := gittest.New(t)
	repo.Commit("base")
	cfg := "version: v1\nproviders:\n  o: {type: openai, model: m, base_url: " + openai.URL + "/v1, api_key_env: DP_O}\n" +
		"  a: {type: anthropic, model: m, base_url: " + anthropic.URL + ", api_key_env: DP_A}\n"
	os.MkdirAll(filepath.Join(repo.Dir, ".config/diffpal"), 0o755)
	os.WriteFile(filepath.Join(repo.Dir, ".config/diffpal/config.yaml"), []byte(cfg), 0o644)
	t.Setenv("DP_O", "sk-openai-secret")
	t.Setenv("DP_A", "sk-ant-secret")
	var out bytes.Buffer
	err := doctorRun(context.Background(), &DoctorOptions{IO: &IOStreams{Out: &out, ErrOut: &out}, Dir: repo.Dir, Online: true})
	if err == nil {
		t.Fatal("a rejected key must fail the doctor")
	}
	s := out.String()
	for _, want := range []string{"provider o: " + openai.URL + "/v1/models reachable (HTTP 200)", "provider a: " + anthropic.URL + "/v1/models rejected the key (HTTP 401)"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in:\n%s", want, s)
		}
	}
	if gotAuth != "Bearer sk-openai-secret" || gotKey != "sk-ant-secret" || gotVersion != "2023-06-01" {
		t.Errorf("headers: %q %q %q", gotAuth, gotKey, gotVersion)
	}
	if strings.Contains(s, "sk-openai-secret") || strings.Contains(s, "sk-ant-secret") {
		t.Errorf("a key reached the output:\n%s", s)
	}
}
