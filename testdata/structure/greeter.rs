/// A greeter.
#[derive(Debug)]
pub struct Greeter {
    name: String,
}

impl Greeter {
    /// Greets.
    pub fn greet(&self) -> String {
        format!("hello {}", self.name)
    }
}

fn main() {
    println!("{}", Greeter { name: "x".into() }.greet());
}
