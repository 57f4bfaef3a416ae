package dev.polystack.host.cli;

public final class Main {
  private Main() {}

  public static void main(String[] args) {
    System.exit(0);
  }
}
