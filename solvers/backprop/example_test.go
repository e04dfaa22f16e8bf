package backprop_test

import (
	"context"
	"fmt"
	"log"

	"github.com/convexnn/convexnn/data"
	"github.com/convexnn/convexnn/solvers"
	"github.com/convexnn/convexnn/solvers/backprop"
)

// The paper's baselines: back-propagation (GD-std) and, against it, PGD;
// RobustAccuracy scores a network clean and under attack.
func ExampleTrain() {
	x, y, err := data.Disk2D(60, 3)
	if err != nil {
		log.Fatal(err)
	}
	o := backprop.Options{Width: 16, Beta: 1e-4, Loss: solvers.HingeLoss, LearningRate: 0.01, Epochs: 300, Seed: 1, Bias: true}
	b, _, err := backprop.Train(context.Background(), x, y, o, nil)
	if err != nil {
		log.Fatal(err)
	}
	attack := backprop.AttackOptions{Eps: 0.2, Loss: solvers.HingeLoss, KeepBest: true}
	clean, err := backprop.RobustAccuracy(b.Network(), x, y, backprop.NoAdversary, attack)
	if err != nil {
		log.Fatal(err)
	}
	pgd, err := backprop.RobustAccuracy(b.Network(), x, y, backprop.PGDAdversary, attack)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("training accuracy %.2f, under PGD (ε = 0.2) %.2f\n", clean, pgd)
	// Output:
	// training accuracy 1.00, under PGD (ε = 0.2) 0.52
}
