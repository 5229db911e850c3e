package integration

import (
	"fmt"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func TestZZRender(t *testing.T) {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	m, err := k.Run(filesys.MakeFsOnDisk(), "/work/main/deploy/overlays/orders")
	if err != nil {
		t.Fatal(err)
	}
	y, _ := m.AsYaml()
	fmt.Println(string(y))
}
