package io.github.idemtx.keys;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.idemtx.keys.internal.CaseFold;
import io.github.idemtx.keys.internal.DerivedText;
import java.util.List;
import org.junit.jupiter.api.Test;

class DerivedTextTest {

    @Test
    void codePointOrderDiffersFromUtf16OrderForSupplementaryCharacters() {
        String privateUse = "\uE000";
        String moneyBag = "\uD83D\uDCB0"; // U+1F4B0

        assertThat(privateUse.compareTo(moneyBag)).isPositive();
        assertThat(DerivedText.CODE_POINT_ORDER.compare(privateUse, moneyBag)).isNegative();
        assertThat(DerivedText.CODE_POINT_ORDER.compare(moneyBag, privateUse)).isPositive();
        assertThat(DerivedText.sorted(List.of(moneyBag, "\uFFFD", "b", privateUse, "a", "ab", "")))
                .containsExactly("", "a", "ab", "b", privateUse, "\uFFFD", moneyBag);
    }

    @Test
    void codePointOrderAgreesWithCompareToWithinTheBmpBelowSurrogates() {
        assertThat(DerivedText.CODE_POINT_ORDER.compare("abc", "abd")).isNegative();
        assertThat(DerivedText.CODE_POINT_ORDER.compare("abc", "abc")).isZero();
        assertThat(DerivedText.CODE_POINT_ORDER.compare("abc", "ab")).isPositive();
        assertThat(DerivedText.CODE_POINT_ORDER.compare("\u00e9", "z")).isPositive();
    }

    @Test
    void pythonStripRemovesWhatStrIsspaceMatchesAndNothingElse() {
        assertThat(DerivedText.pythonStrip(
                        "\u00a0\u3000\u2003\t\n\u000b\f\r\u001c\u001f\u0085\u1680\u2028\u2029\u202f\u205f x y \u00a0"))
                .isEqualTo("x y");
        assertThat(DerivedText.pythonStrip("\u200bx\ufeff")).isEqualTo("\u200bx\ufeff");
        assertThat(DerivedText.pythonStrip("\u180ex")).isEqualTo("\u180ex");
        assertThat(DerivedText.pythonStrip(" \u00a0 ")).isEmpty();
        assertThat(DerivedText.pythonStrip("")).isEmpty();
        assertThat(DerivedText.pythonStrip("\u0000x\u0000")).isEqualTo("\u0000x\u0000");
    }

    @Test
    void wellFormedMeansNoUnpairedSurrogate() {
        assertThat(DerivedText.isWellFormed("")).isTrue();
        assertThat(DerivedText.isWellFormed("a\uD83D\uDE00b")).isTrue();
        assertThat(DerivedText.isWellFormed("\uD83D")).isFalse();
        assertThat(DerivedText.isWellFormed("\uDE00\uD83D")).isFalse();
        assertThat(DerivedText.isWellFormed("a\uDE00")).isFalse();
        assertThat(DerivedText.isWellFormed("\uD83D\uD83D\uDE00")).isFalse();
    }

    @Test
    void caseFoldingIsPythonsCasefold() {
        assertThat(CaseFold.available()).isTrue();
        assertThat(CaseFold.fold("Stra\u00dfe")).isEqualTo("strasse");
        assertThat(CaseFold.fold("\u0130")).isEqualTo("i\u0307");
        assertThat(CaseFold.fold("\u0131")).isEqualTo("\u0131");
        assertThat(CaseFold.fold("\u03a3\u03c2\u03c3")).isEqualTo("\u03c3\u03c3\u03c3");
        assertThat(CaseFold.fold("\ufb01")).isEqualTo("fi");
        assertThat(CaseFold.fold("\u13a0\uab70")).isEqualTo("\u13a0\u13a0");
        assertThat(CaseFold.nfc("e\u0301")).isEqualTo("\u00e9");
        assertThat(CaseFold.nfc("\u212b")).isEqualTo("\u00c5");
    }
}
