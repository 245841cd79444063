package review

import (
	"fmt"
	"slices"
	"strings"

	"github.com/diffpalhq/diffpal/internal/qa"
	"github.com/diffpalhq/diffpal/internal/rules"
)

// Triage: which bundle or profile reviews a change, and which session
// profile answers for the checklists the bundle does not contain.

type triageChoice struct {
	bundle, profile, why string
}

// triage picks the bundle from the changed files' recommended profiles, the
// same file-type rules that produce recommended_profiles.
func triage(ch *Change, rec []qa.Profile, forceBundle, forceProfile string) triageChoice {
	if forceBundle != "" {
		return triageChoice{bundle: forceBundle, why: "bundle " + forceBundle + " chosen by --bundle, DIFFPAL_BUNDLE or the config"}
	}
	if forceProfile != "" {
		return triageChoice{profile: forceProfile, why: "profile " + forceProfile + " chosen by --profile, DIFFPAL_PROFILE or the config"}
	}
	// A language bundle fits when most changed source files are in its
	// languages; mixed changes go to the generalist bundle.
	langs := map[string]int{}
	src, allTS, allTests := 0, len(ch.Files) > 0, len(ch.Files) > 0
	for _, f := range ch.Files {
		lang := rules.DetectLanguage(f.Path(), "")
		allTS = allTS && lang == "typescript"
		allTests = allTests && rules.IsTestPath(f.Path())
		if lang != "" && lang != "markdown" && lang != "yaml" && lang != "json" {
			src++
			langs[lang]++
		}
	}
	has := func(p qa.Profile) bool { return slices.Contains(rec, p) }
	most := func(ls ...string) bool {
		n := 0
		for _, l := range ls {
			n += langs[l]
		}
		return src > 0 && 2*n > src
	}
	b := qa.BundleOrdinaryMR
	switch {
	case has(qa.ProfileMobileReviewer) && most("swift", "kotlin", "java", "xml", "gradle", "plist", "objc"):
		b = qa.BundleMobile
	case has(qa.ProfileTypeScriptReviewer) && allTS && allTests:
		b = qa.BundleAutotest
	case has(qa.ProfileTypeScriptReviewer) && has(qa.ProfileReactReviewer) && most("typescript", "javascript"):
		b = qa.BundleWidget
	case has(qa.ProfileReactReviewer) && most("typescript", "javascript"):
		b = qa.BundleWidgetJS
	case has(qa.ProfileRubyReviewer) && most("ruby"):
		b = qa.BundleRubyBackend
	case has(qa.ProfilePythonReviewer) && most("python"):
		b = qa.BundlePythonBackend
	}
	names := make([]string, len(rec))
	for i, p := range rec {
		names[i] = string(p)
	}
	if len(names) == 0 {
		return triageChoice{bundle: string(b), why: fmt.Sprintf("bundle %s (the changed files call for no specialist profile)", b)}
	}
	return triageChoice{bundle: string(b), why: fmt.Sprintf("bundle %s from recommended profiles [%s]", b, strings.Join(names, ", "))}
}

// candidateProfiles may report finding candidates; the explorer and the
// test analyzer report evidence maps and coverage gaps instead.
func canReport(p qa.Profile) bool {
	r, err := qa.Prepare(qa.PrepareInput{AgentProfile: p})
	return err == nil && slices.Contains(r.RequiredSections, qa.SectionFindingCandidates)
}

var foldOrder = []qa.Profile{qa.ProfileCodeReviewer, qa.ProfileTypeScriptReviewer, qa.ProfilePythonReviewer,
	qa.ProfileRubyReviewer, qa.ProfileMobileReviewer, qa.ProfileReactReviewer, qa.ProfileSecurityReviewer, qa.ProfileSilentFailureHunter}

// foldProfiles maps every rule profile to the session profile that answers
// for it: itself when the session has it and it may report candidates,
// else the session's generalist. All checklists run on every review; the
// bundle decides who reports them, and the audit records the folding.
func foldProfiles(session []qa.Profile) map[string]qa.Profile {
	fallback := session[0]
	for _, p := range foldOrder {
		if slices.Contains(session, p) {
			fallback = p
			break
		}
	}
	out := map[string]qa.Profile{}
	for _, rp := range rules.Profiles {
		p := qa.Profile(rp)
		if slices.Contains(session, p) && canReport(p) {
			out[rp] = p
		} else {
			out[rp] = fallback
		}
	}
	return out
}
