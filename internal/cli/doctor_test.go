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

	// Azure-style: key in its own header, api-version in the base URL's
	// query, which the models path must not swallow.
	var azurePath, azureVersion, azureKey, azureAuth string
	azure := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		azurePath, azureVersion = r.URL.Path, r.URL.Query().Get("api-version")
		azureKey, azureAuth = r.Header.Get("api-key"), r.Header.Get("Authorization")
		w.Write([]byte(`{"object":"list","data":[]}`))
	}))
	defer azure.Close()

	repo := gittest.New(t)
	repo.Commit("base")
	cfg := "version: v1\nproviders:\n  o: {type: openai, model: m, base_url: " + openai.URL + "/v1, api_key_env: DP_O}\n" +
		"  a: {type: anthropic, model: m, base_url: " + anthropic.URL + ", api_key_env: DP_A}\n" +
		"  z: {type: openai, model: m, base_url: '" + azure.URL + "/openai?api-version=2024-10-21', api_key_header: api-key, api_key_env: DP_Z}\n"
	os.MkdirAll(filepath.Join(repo.Dir, ".config/diffpal"), 0o755)
	os.WriteFile(filepath.Join(repo.Dir, ".config/diffpal/config.yaml"), []byte(cfg), 0o644)
	t.Setenv("DP_O", "sk-openai-secret")
	t.Setenv("DP_A", "sk-ant-secret")
	t.Setenv("DP_Z", "azure-secret-key")
	var out bytes.Buffer
	err := doctorRun(context.Background(), &DoctorOptions{IO: &IOStreams{Out: &out, ErrOut: &out}, Dir: repo.Dir, Online: true})
	if err == nil {
		t.Fatal("a rejected key must fail the doctor")
	}
	s := out.String()
	for _, want := range []string{"provider o: " + openai.URL + "/v1/models reachable (HTTP 200)", "provider a: " + anthropic.URL + "/v1/models rejected the key (HTTP 401)",
		"provider z: " + azure.URL + "/openai/models?api-version=2024-10-21 reachable (HTTP 200)"} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in:\n%s", want, s)
		}
	}
	if gotAuth != "Bearer sk-openai-secret" || gotKey != "sk-ant-secret" || gotVersion != "2023-06-01" {
		t.Errorf("headers: %q %q %q", gotAuth, gotKey, gotVersion)
	}
	if azurePath != "/openai/models" || azureVersion != "2024-10-21" || azureKey != "azure-secret-key" || azureAuth != "" {
		t.Errorf("azure request: path %q api-version %q api-key %q Authorization %q", azurePath, azureVersion, azureKey, azureAuth)
	}
	if strings.Contains(s, "sk-openai-secret") || strings.Contains(s, "sk-ant-secret") || strings.Contains(s, "azure-secret-key") {
		t.Errorf("a key reached the output:\n%s", s)
	}
}
