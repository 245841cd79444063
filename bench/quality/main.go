// Command quality runs the full review engine over the labelled corpus
// (internal/rules/testdata/corpus) and prints precision and recall, overall
// and per language, as a Markdown table.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/diffpalhq/diffpal/internal/review"
)

func main() {
	dir := flag.String("corpus", "internal/rules/testdata/corpus", "corpus directory")
	verbose := flag.Bool("v", false, "list every miss and extra")
	flag.Parse()
	q, err := review.EvaluateCorpus(context.Background(), *dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quality:", err)
		os.Exit(1)
	}
	fmt.Printf("corpus: %d cases (%d with planted issues, %d clean look-alikes)\n\n", q.Cases, q.Positive, q.Negative)
	fmt.Println("| language | TP | FP | FN | precision | recall |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, l := range q.Languages() {
		s := q.ByLang[l]
		fmt.Printf("| %s | %d | %d | %d | %s | %s |\n", l, s.TP, s.FP, s.FN, pct(s.TP, s.TP+s.FP), pct(s.TP, s.TP+s.FN))
	}
	fmt.Printf("| **all** | %d | %d | %d | **%.3f** | **%.3f** |\n", q.TP, q.FP, q.FN, q.Precision(), q.Recall())
	if *verbose {
		for _, m := range q.Misses {
			fmt.Println("missed:", m)
		}
		for _, x := range q.Extras {
			fmt.Println("extra: ", x)
		}
	}
	if q.Precision() < 0.90 || q.Recall() < 0.80 {
		fmt.Fprintln(os.Stderr, "quality: below the bar (precision 0.90, recall 0.80)")
		os.Exit(1)
	}
}

func pct(a, b int) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f", float64(a)/float64(b))
}
