package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/ckpt-dev/ckpt/internal/storage"
)

// AzureHint is the message tests give when no Azure emulator is configured.
const AzureHint = `Azure tests need Azurite: run eval "$(.ci/azure.sh start)"`

// AzureEnv returns the test emulator's connection string, CKPT_TEST_AZURE_CONNECTION_STRING
// (account devstoreaccount1, key and blob endpoint). When it is unset the test fails if CI is
// set and is skipped otherwise, with AzureHint either way.
func AzureEnv(t testing.TB) string {
	t.Helper()
	return need(t, "CKPT_TEST_AZURE_CONNECTION_STRING", AzureHint)
}

// AzureAccount is the account the test connection string names.
func AzureAccount(t testing.TB) string {
	t.Helper()
	for _, part := range strings.Split(AzureEnv(t), ";") {
		if k, v, ok := strings.Cut(part, "="); ok && strings.EqualFold(k, "AccountName") {
			return v
		}
	}
	t.Fatal("CKPT_TEST_AZURE_CONNECTION_STRING names no AccountName")
	return ""
}

// AzureContainer creates a fresh container on the test emulator and returns its client.
// Cleanup deletes the container (best-effort; failures are logged).
func AzureContainer(t testing.TB) *container.Client {
	t.Helper()
	name := RandomName("ckpt-test-")
	client, err := container.NewClientFromConnectionString(AzureEnv(t), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := client.Create(ctx, nil); err != nil {
		t.Fatalf("create container %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := client.Delete(ctx, nil); err != nil {
			t.Logf("cleanup: delete container %s: %v", name, err)
		}
	})
	return client
}

// Azure returns a store on a fresh container, rooted at a random prefix so that blobs outside
// the root exist only if the store wrote them there.
func Azure(t testing.TB) *storage.Azure {
	t.Helper()
	return storage.NewAzureFromClient(AzureContainer(t), RandomName("root-"))
}
