package dev.polystack.host.elf;

/** Memoizes a parse step, including its failure, so repeated calls are cheap and consistent. */
final class Lazy<T> {
  interface Step<T> {
    T run() throws ElfParseException;
  }

  private final Step<T> step;
  private boolean done;
  private T value;
  private ElfParseException failure;

  Lazy(Step<T> step) {
    this.step = step;
  }

  synchronized T get() throws ElfParseException {
    if (!done) {
      try {
        value = step.run();
      } catch (ElfParseException e) {
        failure = e;
      }
      done = true;
    }
    if (failure != null) {
      throw new ElfParseException(failure.getMessage(), failure);
    }
    return value;
  }
}
