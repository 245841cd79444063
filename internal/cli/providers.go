package cli

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/diffpalhq/diffpal/internal/config"
	"github.com/diffpalhq/diffpal/internal/provider/llm"
	"github.com/diffpalhq/diffpal/internal/providerset"
)

// buildProviders sets up the review's providers (package providerset) and
// maps its errors to exit codes: a refused key is 3, anything else 2.
func buildProviders(ch providerset.Choice, cfg *config.Config) (*providerset.Set, error) {
	set, err := providerset.Build(ch, cfg)
	if err != nil {
		var pe *providerset.Error
		if errors.As(err, &pe) && pe.Auth {
			return nil, &ExitError{Code: ExitProvider, Err: err}
		}
		return nil, &ExitError{Code: ExitUsage, Err: err}
	}
	return set, nil
}

// providerErr maps a failed review to exit 3 when a provider gave up.
func providerErr(err error, set *providerset.Set) error {
	if !errors.Is(err, llm.ErrProviderFailed) {
		return nil
	}
	if errors.Is(err, llm.ErrProviderAuth) {
		var envs []string
		for _, e := range set.KeyEnvs {
			envs = append(envs, e)
		}
		sort.Strings(envs)
		hint := ""
		if len(envs) > 0 {
			hint = " (check " + strings.Join(envs, ", ") + ")"
		}
		return &ExitError{Code: ExitProvider, Err: fmt.Errorf("provider authentication failed%s: %w", hint, err)}
	}
	return &ExitError{Code: ExitProvider, Err: fmt.Errorf("provider failed after retries: %w", err)}
}
