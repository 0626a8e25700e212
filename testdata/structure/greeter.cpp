#include <string>

namespace demo {

// A greeter.
class Greeter {
 public:
  std::string greet() const { return "hello"; }
};

int add(int a, int b) {
  return a + b;
}

}  // namespace demo

std::string demo_name() { return "demo"; }
