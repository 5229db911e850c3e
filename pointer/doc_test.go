package pointer

import (
	"os"
	"strings"
	"testing"
)

// TestDocumentedExampleIsTheTestedOne: the minimal Python reader shown in
// docs/pointer-format.md is, verbatim, the file the integration tests run.
func TestDocumentedExampleIsTheTestedOne(t *testing.T) {
	doc, err := os.ReadFile("../docs/pointer-format.md")
	if err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("../docs/examples/minimal_reader.py")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```python\n"+string(script)+"```") {
		t.Error("docs/pointer-format.md does not show docs/examples/minimal_reader.py as it is: copy it into the python block")
	}
}
