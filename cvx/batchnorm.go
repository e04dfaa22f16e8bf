package cvx

import (
	"fmt"

	"github.com/convexnn/convexnn/solvers/batchnorm"
)

// BatchNormTable shows a batch-normalized network's neurons: the BN scale γ
// and shift α of Ergen et al.'s ℓ₂-normalized BN and of the usual one (γ/√n,
// α/√n, dividing by the standard deviation), the output weight, and the
// training batch statistics (mean and norm of the centred pre-activations)
// it predicts with.
func BatchNormTable(net *batchnorm.Network) error {
	if err := net.Validate(); err != nil {
		return err
	}
	g, a := net.Standard()
	rows := make([][]string, net.Width())
	for j := range rows {
		rows[j] = []string{fmt.Sprint(j + 1), fmt.Sprintf("%.4g", net.Gamma[j]), fmt.Sprintf("%.4g", net.Alpha[j]),
			fmt.Sprintf("%.4g", g[j]), fmt.Sprintf("%.4g", a[j]), fmt.Sprintf("%.4g", net.A[j]),
			fmt.Sprintf("%.4g", net.Mean[j]), fmt.Sprintf("%.4g", net.Scale[j])}
	}
	return Table(fmt.Sprintf("Batch-normalized neurons (training batch of %d)", net.N),
		[]string{"neuron", "γ", "α", "γ (std)", "α (std)", "output weight", "batch mean", "batch norm"}, rows)
}
