package greeter

import "fmt"

// Greeter says hello.
type Greeter struct {
	Name string
}

// Greet returns a greeting.
func (g *Greeter) Greet() string {
	return fmt.Sprintf("hello %s", g.Name)
}

func New(name string) *Greeter {
	return &Greeter{Name: name}
}
