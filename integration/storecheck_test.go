package integration

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/offloader/offloader/stores/azblob"
)

// readOnlySAS is a connection string for Azurite's account that may read and
// list, but not write: an account SAS signed with the emulator's key.
func readOnlySAS(t *testing.T) string {
	t.Helper()
	endpoint, token := accountSAS(t, sas.AccountPermissions{Read: true, List: true})
	return fmt.Sprintf("BlobEndpoint=%s;SharedAccessSignature=%s", endpoint, token)
}

// accountSAS is Azurite's blob endpoint and an account SAS token with perms,
// signed with the emulator's key.
func accountSAS(t *testing.T, perms sas.AccountPermissions) (endpoint, token string) {
	t.Helper()
	parts := map[string]string{}
	for _, p := range strings.Split(strings.TrimRight(azureConnStr, ";"), ";") {
		k, v, _ := strings.Cut(p, "=")
		parts[k] = v
	}
	cred, err := sdk.NewSharedKeyCredential(parts["AccountName"], parts["AccountKey"])
	if err != nil {
		t.Fatal(err)
	}
	q, err := sas.AccountSignatureValues{
		Protocol:      sas.ProtocolHTTPSandHTTP,
		ExpiryTime:    time.Now().Add(time.Hour).UTC(),
		Permissions:   perms.String(),
		ResourceTypes: (&sas.AccountResourceTypes{Service: true, Container: true, Object: true}).String(),
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	return parts["BlobEndpoint"], q.Encode()
}

// TestCheckProbesEveryStore: check answers for the stores too. A store that
// works is probed (write, read back, delete, leaving nothing behind); a
// missing container and credentials that may not write are each a FAILS row
// with a fix, and exit 1.
func TestCheckProbesEveryStore(t *testing.T) {
	t.Parallel()
	raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
	createTopic(t, raw, 1, nil)
	createTopic(t, slim, 1, nil)
	existing := uniqueName(t, "c")
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	cfg := azblob.DefaultConfig()
	cfg.ConnectionString, cfg.Container, cfg.CreateContainer = azureConnStr, existing, true
	if _, err := azblob.Open(ctx, "setup", cfg); err != nil {
		t.Fatal(err)
	}
	missing := uniqueName(t, "c")
	for _, tc := range []struct {
		name, connStr, container string
		code                     int
		rows                     []string
		problem                  string
	}{
		{"works", azureConnStr, existing, 0, []string{
			`payloads\s+azblob\s+open\s+ok`,
			`payloads\s+azblob\s+write, read back, delete under works/\s+ok`,
			`payloads\s+azblob\s+payload lifetime\s+WARN: kept forever \(set object_lifetime`,
		}, "every store works"},
		{"nocontainer", azureConnStr, missing, 1, []string{`payloads\s+azblob\s+open\s+FAILS`},
			fmt.Sprintf("container %q does not exist: create it or set create_container: true\n  fix: ", missing)},
		{"readonly", readOnlySAS(t), existing, 1, []string{
			`payloads\s+azblob\s+open\s+ok`,
			`payloads\s+azblob\s+write, read back, delete under readonly/\s+FAILS`,
		}, `fix: give store "payloads"'s credentials write access (Azure: the role Storage Blob Data Contributor`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := newPipeline(t, tc.name, raw, slim, "g").with(t, `
stores:
  payloads: {type: azblob, connection_string: %q, container: %s}
transforms:
  - {type: offload, store: payloads, threshold: 64KiB}
`, tc.connStr, tc.container).file(t)
			out, err := command(offloaderBinary(t), "check", "-F", file).CombinedOutput()
			if code := exitCode(err); code != tc.code {
				t.Fatalf("exit code %d, want %d:\n%s", code, tc.code, out)
			}
			for _, row := range append(tc.rows, `all limits are aligned`) {
				if !regexp.MustCompile(row).Match(out) {
					t.Errorf("output lacks %q:\n%s", row, out)
				}
			}
			if !strings.Contains(string(out), tc.problem) {
				t.Errorf("output lacks %q:\n%s", tc.problem, out)
			}
		})
	}
	// The probes left nothing behind, and made no container.
	client, err := sdk.NewClientFromConnectionString(azureConnStr, nil)
	if err != nil {
		t.Fatal(err)
	}
	pager := client.NewListBlobsFlatPager(existing, nil)
	blobs := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		blobs += len(page.Segment.BlobItems)
	}
	if blobs != 0 {
		t.Errorf("the probes left %d objects in %s", blobs, existing)
	}
	if _, err := client.ServiceClient().NewContainerClient(missing).GetProperties(ctx, nil); err == nil {
		t.Errorf("check created container %s, which sets no create_container", missing)
	}
}
