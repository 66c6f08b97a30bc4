package io.github.idemtx.bench;

/** Placeholder until the bench lands. */
public final class Bench {
    private Bench() {}

    public static void main(String[] args) {
        System.out.println("bench: coming");
    }
}
