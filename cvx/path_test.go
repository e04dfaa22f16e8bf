package cvx

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestGatedPath(t *testing.T) {
	x, y := threeClasses(120, 7)
	vx, vy := threeClasses(60, 8)
	prob := func() *Problem { return Multiclass(x, y, 3).Bias().SamplePatterns(10, 1) }
	dir := RunDir(t.TempDir())
	opt := PathOptions{Points: 8, MinRatio: 1e-2, ValX: vx, ValY: vy, Solve: GatedOptions{Tol: 1e-6}}
	start := time.Now()
	full, err := dir.Path(context.Background(), "p", prob(), opt)
	if err != nil {
		t.Fatal(err)
	}
	pathTime := time.Since(start)
	if len(full.Points) != 8 || full.Points[0].Active != 0 || full.Points[7].Active == 0 {
		t.Fatalf("path: %+v", full.Points)
	}
	for k, pt := range full.Points {
		t.Logf("β %.3g: objective %.6g, gap %.1e, %d active, %d steps, train %.3f, validation %.3f", pt.Beta, pt.Objective, pt.Gap, pt.Active, pt.Iterations, pt.Train, pt.Validation)
		if pt.Gap > 1e-6 || pt.Lower > pt.Objective || pt.Validation < 0 {
			t.Errorf("point %d: %+v", k, pt)
		}
		if k > 0 && pt.Beta >= full.Points[k-1].Beta {
			t.Errorf("grid not decreasing at %d", k)
		}
	}
	// One cold solve at the smallest β, for the cost comparison.
	start = time.Now()
	cold, err := SolveGated(prob().Beta(full.Points[7].Beta), GatedOptions{Tol: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("path %.2fs (%d steps in all) against one cold solve at the smallest β %.2fs (%d steps)", pathTime.Seconds(), sumSteps(full.Points), time.Since(start).Seconds(), cold.Iterations)
	if d := cold.Objective - full.Points[7].Objective; d > 1e-6*cold.Objective || d < -1e-6*cold.Objective {
		t.Errorf("the path's last point %.9g differs from a cold solve %.9g", full.Points[7].Objective, cold.Objective)
	}
	// Interrupted after three points, the path continues where it stopped.
	ctx, cancel := context.WithCancel(context.Background())
	cut := opt
	done := 0
	cut.OnPoint = func(PathPoint) {
		if done++; done == 3 {
			cancel()
		}
	}
	partial, err := dir.Path(ctx, "r", prob(), cut)
	if err == nil || len(partial.Points) != 3 {
		t.Fatalf("cancelled path: %d points, %v", len(partial.Points), err)
	}
	again, err := dir.Path(context.Background(), "r", prob(), opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Points) != 8 {
		t.Fatalf("resumed path has %d points", len(again.Points))
	}
	for k := range again.Points {
		if again.Points[k].Objective != full.Points[k].Objective {
			t.Errorf("resumed point %d: %.12g, uninterrupted %.12g", k, again.Points[k].Objective, full.Points[k].Objective)
		}
	}
	// Another grid under the same name is refused; a corrupt file too.
	if _, err := dir.Path(context.Background(), "r", prob(), PathOptions{Points: 5, ValX: vx, ValY: vy}); err == nil || !strings.Contains(err.Error(), "another problem, β grid") {
		t.Errorf("other grid: %v", err)
	}
	// One digit of a finished point's objective changed: refused by the
	// file's checksum, not read as a result.
	saved, err := os.ReadFile(filepath.Join(string(dir), "p.path.json"))
	if err != nil {
		t.Fatal(err)
	}
	digits := fmt.Sprintf(`"objective":%v`, full.Points[2].Objective)
	if !bytes.Contains(saved, []byte(digits)) {
		t.Fatalf("the saved path has no %s", digits)
	}
	damaged := bytes.Replace(saved, []byte(digits), []byte(digits[:len(digits)-1]+string("0123456789"[(int(digits[len(digits)-1]-'0')+1)%10])), 1)
	os.WriteFile(filepath.Join(string(dir), "dmg.path.json"), damaged, 0o644)
	if _, err := dir.Path(context.Background(), "dmg", prob(), opt); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("a damaged digit: %v", err)
	}
	os.WriteFile(filepath.Join(string(dir), "bad.path.json"), []byte("{"), 0o644)
	if _, err := dir.Path(context.Background(), "bad", prob(), opt); err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("corrupt file: %v", err)
	}
	if _, err := PathFigure(full); err != nil {
		t.Fatal(err)
	}
	// A problem that failed to build, and validation labels that are not
	// the problem's classes, are refused with their cause.
	if _, err := dir.Path(context.Background(), "nil", Multiclass(nil, nil, 3).SamplePatterns(3, 1), opt); err == nil || !strings.Contains(err.Error(), "X is nil") {
		t.Errorf("nil X: %v", err)
	}
	badY := slices.Clone(vy)
	badY[4] = 7
	if _, err := dir.Path(context.Background(), "badval", prob(), PathOptions{Points: 3, ValX: vx, ValY: badY}); err == nil || !strings.Contains(err.Error(), "validation set: label y[4] = 7") {
		t.Errorf("validation label 7 of 3 classes: %v", err)
	}
}

func sumSteps(pts []PathPoint) int {
	s := 0
	for _, p := range pts {
		s += p.Iterations
	}
	return s
}
