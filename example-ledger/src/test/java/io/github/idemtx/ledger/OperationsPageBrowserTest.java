package io.github.idemtx.ledger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.idemtx.db.testing.DatabaseTest;
import io.github.idemtx.db.testing.TestDatabase;
import io.github.idemtx.ledger.LedgerHttpTest.Reply;
import io.github.idemtx.ledger.bank.BankServer;
import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.NoAlertPresentException;
import org.openqa.selenium.WebDriver;
import org.openqa.selenium.WebElement;
import org.openqa.selenium.WindowType;
import org.openqa.selenium.support.ui.ExpectedConditions;
import org.openqa.selenium.support.ui.WebDriverWait;

/**
 * The operations page end to end, in a headless Chromium: payouts whose answers and lookups the bank
 * lost end needing reconciliation; an operator sees them oldest first with what the bank says now,
 * settles one as applied and one as refused through the forms, meets the refusal of a stale form,
 * and forgets a settled claim through the look-up; the ledger's API and books follow. A request
 * holding a script and quotes is shown as text.
 */
@DatabaseTest
class OperationsPageBrowserTest {

    @RegisterExtension
    static final HeadlessChromium BROWSER = new HeadlessChromium();

    static final String TOKEN = "token-ops";
    static final String TENANT = "tenant-ops";
    static final String HOSTILE = "<script>alert(1)</script>\"'";
    static BankServer bank;
    static LedgerServer ledger;
    static final HttpClient HTTP = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        bank = io.github.idemtx.ledger.bank.BankFixture.start("ops_bank", "--hang-ms=4500");
        ledger = LedgerServer.startFresh(LedgerFixture.args(
                "ops_browser",
                "--port=0",
                "--admin-port=0",
                "--payout-lookups-ms=300,600", // a short schedule: needing reconciliation within seconds
                "--tokens=" + TOKEN + "=" + TENANT,
                "--bank-url=http://127.0.0.1:" + bank.port()));
    }

    @AfterAll
    static void stop() {
        if (ledger != null) {
            ledger.close();
        }
        if (bank != null) {
            bank.close();
        }
        LedgerFixture.dropSchema("ops_browser");
        TestDatabase.get().execute("DROP SCHEMA IF EXISTS " + TestDatabase.get().schema() + "_ops_bank CASCADE");
    }

    // ------------------------------------------------------------------ the tenant's API

    private static Reply tenant(String method, String path, String key, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + ledger.port() + path))
                .header("Authorization", "Bearer " + TOKEN)
                .header("Content-Type", "application/json");
        b = body == null ? b.GET() : b.method(method, HttpRequest.BodyPublishers.ofString(body));
        if (key != null) {
            b.header("Idempotency-Key", key);
        }
        HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
        return new Reply(r.statusCode(), r);
    }

    private static String fundedAccount(String amount) throws Exception {
        String account = tenant("POST", "/accounts", UUID.randomUUID().toString(), "{\"currency\":\"BRL\"}")
                .json()
                .get("id")
                .asText();
        assertThat(tenant(
                                "POST",
                                "/accounts/" + account + "/deposits",
                                UUID.randomUUID().toString(),
                                "{\"amount\":\"" + amount + "\"}")
                        .status())
                .isEqualTo(201);
        return account;
    }

    private static String payoutState(String key) throws Exception {
        String id;
        try (Connection c = TestDatabase.get().connect();
                java.sql.PreparedStatement s = c.prepareStatement("SELECT id FROM " + ledger.schema()
                        + ".payout WHERE tenant = ? AND idem_key = ? ORDER BY created_at DESC LIMIT 1")) {
            s.setString(1, TENANT);
            s.setString(2, key);
            try (ResultSet rs = s.executeQuery()) {
                assertThat(rs.next()).as("a payout of key " + key).isTrue();
                id = rs.getString(1);
            }
        }
        return tenant("GET", "/payouts/" + id, null, null).json().get("state").asText();
    }

    /** A payout whose answer was lost, with the JSON-escaped {@code destination}. */
    private static void unknownPayout(String account, String key, String amount, String destination) throws Exception {
        String json = destination.replace("\\", "\\\\").replace("\"", "\\\"");
        Reply r = tenant(
                "POST",
                "/payouts",
                key,
                "{\"from\":\"" + account + "\",\"amount\":\"" + amount + "\",\"destination\":\"" + json + "\"}");
        assertThat(r.status()).as(r.response().body()).isEqualTo(503);
    }

    // ------------------------------------------------------------------ the page

    private static String ops() {
        return "http://127.0.0.1:" + ledger.adminPort() + "/ops";
    }

    private static WebDriver browser() {
        return BROWSER.driver();
    }

    /** The row of {@code key} in the list {@code section}; null when it is not listed. */
    private static WebElement row(String section, String key) {
        for (WebElement row : browser().findElements(By.cssSelector("#" + section + " tr.claim"))) {
            if (key.equals(row.getAttribute("data-key"))) {
                return row;
            }
        }
        return null;
    }

    private static List<String> listedKeys(String section) {
        return browser().findElements(By.cssSelector("#" + section + " tr.claim")).stream()
                .map(r -> r.getAttribute("data-key"))
                .toList();
    }

    private static void fill(WebElement form, String name, String value) {
        WebElement input = form.findElement(By.name(name));
        input.clear();
        input.sendKeys(value);
    }

    private static void submit(WebElement form, String operator, String reason) {
        fill(form, "operator", operator);
        fill(form, "reason", reason);
        form.findElement(By.cssSelector("button[type=submit]")).click();
    }

    /** Waits for the element {@code id} to appear; on a timeout the failure shows the page as it is. */
    private static void await(String id) {
        try {
            BROWSER.waiting().until(ExpectedConditions.presenceOfElementLocated(By.id(id)));
        } catch (org.openqa.selenium.TimeoutException e) {
            throw new AssertionError(
                    "no #" + id + " on " + browser().getCurrentUrl() + ":\n"
                            + browser().findElement(By.tagName("body")).getText(),
                    e);
        }
    }

    private static void assertNoAlert() {
        assertThatThrownBy(() -> browser().switchTo().alert())
                .as("no script of a stored request ran")
                .isInstanceOf(NoAlertPresentException.class);
        assertThat(browser().findElements(By.tagName("script"))).isEmpty();
    }

    @Test
    void anOperatorSettlesRefusesAndForgetsThroughThePage() throws Exception {
        String account = fundedAccount("100.00");
        String charged = "charged-" + UUID.randomUUID();
        // a key may hold markup too (printable ASCII; the header form this ledger reads has no '"' unquoted)
        String notCharged = "<script>alert(2)</script>'-" + UUID.randomUUID();
        // the bank charges but its answer is lost, and no lookup answers: the ledger cannot learn the outcome
        bank.faults().set(Map.of("timeoutAfterApplyRate", "1", "lookupErrorRate", "1"));
        try {
            unknownPayout(account, charged, "30.00", "BR12 3456");
            // the bank fails before charging, its lookups still unanswered
            bank.faults().set(Map.of("timeoutAfterApplyRate", "0", "errorBeforeApplyRate", "1"));
            unknownPayout(account, notCharged, "20.00", "BR " + HOSTILE);

            // the page lists them in flight, then (the lookups spent) as needing reconciliation
            browser().get(ops());
            assertThat(browser().getTitle()).isEqualTo("ledger operations");
            new WebDriverWait(browser(), Duration.ofSeconds(120), Duration.ofMillis(500)).until(d -> {
                d.navigate().refresh();
                return listedKeys("needs-reconciliation").containsAll(List.of(charged, notCharged));
            });
        } finally {
            bank.faults()
                    .set(Map.of("timeoutAfterApplyRate", "0", "errorBeforeApplyRate", "0", "lookupErrorRate", "0"));
        }

        // the bank answers lookups again: the page asks it on each load
        browser().navigate().refresh();
        assertThat(listedKeys("needs-reconciliation")).as("oldest first").containsExactly(charged, notCharged);
        WebElement first = row("needs-reconciliation", charged);
        assertThat(first.findElement(By.cssSelector("td.scope")).getText()).isEqualTo(TENANT);
        assertThat(first.findElement(By.cssSelector("td.effect")).getText()).isEqualTo("payout");
        assertThat(first.findElement(By.cssSelector("td.request")).getText()).startsWith("30.00 to BR12 3456");
        assertThat(first.findElement(By.cssSelector("td.downstream")).getText()).startsWith("payout:");
        String says = first.findElement(By.cssSelector("td.bank")).getText();
        assertThat(says).startsWith("found ch_");
        String charge = says.substring("found ".length());
        WebElement second = row("needs-reconciliation", notCharged);
        assertThat(second.findElement(By.cssSelector("td.bank")).getText()).isEqualTo("absent");
        assertThat(second.findElement(By.cssSelector("td.key")).getText()).isEqualTo(notCharged);
        assertThat(second.findElement(By.cssSelector("td.request")).getText())
                .as("the request's script and quotes shown as text")
                .isEqualTo("20.00 to BR " + HOSTILE + " (from account " + account + ")");
        assertNoAlert();

        // what the page says of a claim handed over: no lookup is to come
        assertThat(first.findElement(By.cssSelector("td.lookups")).getText())
                .contains("unanswered; handed over at ", ": no more lookups")
                .doesNotContain("next");
        // the forms follow the bank's answer: "absent" warns against "applied" and prefills the refusal
        assertThat(second.findElement(By.cssSelector("form.applied p.warning")).getText())
                .startsWith("The bank says absent");
        assertThat(first.findElements(By.cssSelector("form.applied p.warning"))).isEmpty();
        assertThat(second.findElement(By.cssSelector("form.refused"))
                        .findElement(By.name("code"))
                        .getAttribute("value"))
                .isEqualTo("not_charged");
        assertFitsAndLabelsItsFields(1920, 1080);
        assertFitsAndLabelsItsFields(1366, 768);

        // a long list pages
        browser().get(ops() + "?per-page=1");
        assertThat(listedKeys("needs-reconciliation")).containsExactly(charged);
        browser().findElement(By.cssSelector("#needs-reconciliation a.next")).click();
        BROWSER.waiting().until(d -> listedKeys("needs-reconciliation").equals(List.of(notCharged)));
        // a full page cannot know whether more follow: the next one may be empty, and says so
        browser().findElement(By.cssSelector("#needs-reconciliation a.next")).click();
        BROWSER.waiting().until(d -> listedKeys("needs-reconciliation").isEmpty());
        assertThat(browser()
                        .findElement(By.cssSelector("#needs-reconciliation p.muted"))
                        .getText())
                .isEqualTo("none");
        assertThat(browser()
                        .findElement(By.cssSelector("#needs-reconciliation a.first"))
                        .getText())
                .isEqualTo("from the oldest");
        browser().get(ops());

        // a second operator settles the charged payout in another tab, from the bank's answer prefilled
        String firstWindow = browser().getWindowHandle();
        browser().switchTo().newWindow(WindowType.TAB);
        browser().get(ops());
        WebElement applied = row("needs-reconciliation", charged).findElement(By.cssSelector("form.applied"));
        assertThat(applied.findElement(By.name("answer")).getAttribute("value")).isEqualTo(charge);
        submit(applied, "bea", "charge on the bank statement");
        await("flash");
        assertThat(browser().findElement(By.id("flash")).getText())
                .isEqualTo("settled " + TENANT + " / " + charged + " as applied (" + charge + ")");
        assertThat(browser().findElement(By.id("claim-state")).getText()).isEqualTo("completed");
        assertThat(browser().findElement(By.id("history")).getText())
                .contains("resolved_applied", "bea", "charge on the bank statement");
        browser().close();
        browser().switchTo().window(firstWindow);

        // the first operator's page is stale: refusing the same payout is refused, and nothing changes
        WebElement refusedStale = row("needs-reconciliation", charged).findElement(By.cssSelector("form.refused"));
        // the bank says found: no refusal code is offered, the operator types one
        assertThat(refusedStale.findElement(By.name("code")).getAttribute("value"))
                .isEmpty();
        fill(refusedStale, "code", "not_charged");
        fill(refusedStale, "message", "thought it was not charged");
        submit(refusedStale, "ana", "stale page");
        await("error");
        assertThat(browser().findElement(By.id("error")).getText())
                .startsWith("refused: cannot resolve the claim: it is settled already (completed at");
        assertThat(browser().findElement(By.id("claim-state")).getText()).isEqualTo("completed");
        assertThat(payoutState(charged)).isEqualTo("paid");

        // the payout the bank never charged is settled as refused
        browser().get(ops());
        assertThat(listedKeys("needs-reconciliation")).containsExactly(notCharged);
        WebElement refused = row("needs-reconciliation", notCharged).findElement(By.cssSelector("form.refused"));
        fill(refused, "code", "not_charged");
        fill(refused, "message", "not on the bank statement");
        submit(refused, "ana", "absent at the bank");
        await("flash");
        assertThat(browser().findElement(By.id("flash")).getText())
                .isEqualTo("settled " + TENANT + " / " + notCharged + " as refused (not_charged)");
        assertThat(browser().findElement(By.id("claim-state")).getText()).isEqualTo("failed");
        assertNoAlert();
        browser().get(ops());
        assertThat(browser()
                        .findElement(By.cssSelector("#needs-reconciliation h2"))
                        .getText())
                .isEqualTo("Needs reconciliation (0)");
        assertThat(payoutState(notCharged)).isEqualTo("refused");

        // the books: the refused hold came back, what was paid out is what the bank charged, nothing held
        assertThat(tenant("GET", "/accounts/" + account, null, null)
                        .json()
                        .get("balance")
                        .asText())
                .isEqualTo("70.00");
        assertThat(bankCharged()).isEqualByComparingTo("30.00");
        assertThat(tenant("GET", "/payouts?state=in_flight", null, null).json()).isEmpty();
        assertBooksBalance();

        // the refused one is looked up and forgotten: the key may be used again
        WebElement lookup = browser().findElement(By.id("lookup"));
        fill(lookup, "scope", TENANT);
        fill(lookup, "key", notCharged);
        lookup.findElement(By.cssSelector("button[type=submit]")).click();
        BROWSER.waiting().until(ExpectedConditions.textToBe(By.id("claim-state"), "failed"));
        assertThat(browser().findElement(By.cssSelector("#claim h2")).getText()).isEqualTo(TENANT + " / " + notCharged);
        assertThat(browser().findElement(By.id("history")).getText()).contains("resolved_refused", "ana");
        submit(browser().findElement(By.id("forget")), "ana", "the client pays out again with this key");
        await("flash");
        assertThat(browser().findElement(By.id("flash")).getText()).startsWith("forgot " + TENANT + " / " + notCharged);
        assertThat(browser().findElement(By.id("claim-state")).getText()).startsWith("no claim for this key");
        assertThat(browser().findElement(By.id("history")).getText())
                .as("the forgotten claim's history still shown")
                .contains("resolved_refused", "ana", "forg");
        assertNoAlert();
    }

    /**
     * At {@code width} x {@code height}: the page needs no sideways scrolling, and every label is bound
     * ({@code for}) to the field it names, which sits on its line, right of it. Keeps a screenshot in
     * target/screenshots.
     */
    private static void assertFitsAndLabelsItsFields(int width, int height) throws Exception {
        browser().manage().window().setSize(new org.openqa.selenium.Dimension(width, height));
        browser().navigate().refresh();
        org.openqa.selenium.JavascriptExecutor js = (org.openqa.selenium.JavascriptExecutor) browser();
        Number scrollWidth = (Number) js.executeScript("return document.documentElement.scrollWidth");
        Number innerWidth = (Number) js.executeScript("return document.documentElement.clientWidth");
        java.nio.file.Path shots = java.nio.file.Path.of("target", "screenshots");
        java.nio.file.Files.createDirectories(shots);
        java.nio.file.Files.write(
                shots.resolve("ops-" + width + "x" + height + ".png"),
                ((org.openqa.selenium.TakesScreenshot) browser())
                        .getScreenshotAs(org.openqa.selenium.OutputType.BYTES));
        assertThat(scrollWidth.intValue())
                .as("page width at " + width + "x" + height)
                .isLessThanOrEqualTo(innerWidth.intValue());
        Map<String, String> names = Map.of(
                "charge id",
                "answer",
                "code",
                "code",
                "message",
                "message",
                "operator",
                "operator",
                "reason",
                "reason",
                "scope",
                "scope",
                "key",
                "key");
        List<WebElement> labels = browser().findElements(By.tagName("label"));
        assertThat(labels).isNotEmpty();
        for (WebElement label : labels) {
            String text = label.getText().trim();
            String id = label.getAttribute("for");
            assertThat(id).as("label '" + text + "' bound to a field").isNotBlank();
            WebElement field = browser().findElement(By.id(id));
            assertThat(field.getAttribute("name"))
                    .as("the field of label '" + text + "'")
                    .isEqualTo(names.get(text));
            org.openqa.selenium.Rectangle l = label.getRect();
            org.openqa.selenium.Rectangle f = field.getRect();
            assertThat(f.getX())
                    .as("'" + text + "' field right of its label")
                    .isGreaterThanOrEqualTo(l.getX() + l.getWidth());
            assertThat(Math.abs((f.getY() + f.getHeight() / 2) - (l.getY() + l.getHeight() / 2)))
                    .as("'" + text + "' field on its label's line")
                    .isLessThanOrEqualTo(f.getHeight());
        }
    }

    /**
     * Balances sum to zero per tenant and currency, every balance is its postings, the bank's clearing
     * account is empty and its paid_out account holds what the bank charged.
     */
    private static void assertBooksBalance() throws Exception {
        String schema = TestDatabase.get().schema() + "_ops_browser";
        try (Connection c = TestDatabase.get().connect();
                Statement s = c.createStatement()) {
            try (ResultSet rs = s.executeQuery("SELECT count(*) FROM (SELECT 1 FROM " + schema
                    + ".account GROUP BY tenant, currency HAVING sum(balance) <> 0) x")) {
                rs.next();
                assertThat(rs.getInt(1))
                        .as("tenants and currencies out of balance")
                        .isZero();
            }
            try (ResultSet rs = s.executeQuery("SELECT count(*) FROM " + schema + ".account a WHERE a.balance <>"
                    + " (SELECT coalesce(sum(p.amount), 0) FROM " + schema + ".posting p WHERE p.account_id = a.id)")) {
                rs.next();
                assertThat(rs.getInt(1))
                        .as("accounts whose balance is not their postings")
                        .isZero();
            }
            try (ResultSet rs = s.executeQuery("SELECT kind, balance FROM " + schema + ".account"
                    + " WHERE kind IN ('clearing', 'paid_out') ORDER BY kind")) {
                java.util.List<String> banks = new java.util.ArrayList<>();
                while (rs.next()) {
                    banks.add(rs.getString(1) + " " + rs.getBigDecimal(2).toPlainString());
                }
                assertThat(banks).containsExactly("clearing 0.00", "paid_out 30.00");
            }
        }
    }

    private static BigDecimal bankCharged() throws Exception {
        try (Connection c = TestDatabase.get().connect();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT coalesce(sum(amount), 0) FROM "
                        + TestDatabase.get().schema() + "_ops_bank.charge WHERE status = 'succeeded'")) {
            rs.next();
            return rs.getBigDecimal(1);
        }
    }
}
