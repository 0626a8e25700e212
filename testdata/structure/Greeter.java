package demo;

/** A greeter. */
public class Greeter {
    private final String name;

    public Greeter(String name) {
        this.name = name;
    }

    @Override
    public String toString() {
        return "hello " + name;
    }
}
