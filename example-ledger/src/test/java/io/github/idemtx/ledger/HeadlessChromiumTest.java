package io.github.idemtx.ledger;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.openqa.selenium.By;
import org.openqa.selenium.support.ui.ExpectedConditions;

/** The browser harness itself: a page served on loopback is rendered, its script runs, its form posts. */
class HeadlessChromiumTest {

    @RegisterExtension
    static final HeadlessChromium BROWSER = new HeadlessChromium();

    static HttpServer server;

    @BeforeAll
    static void serve() throws Exception {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/", exchange -> {
            String body = exchange.getRequestMethod().equals("POST")
                    ? "<!doctype html><title>posted</title><p id=got>"
                            + new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8)
                    : "<!doctype html><title>harness</title><p id=text>&lt;b&gt;as text&lt;/b&gt;</p>"
                            + "<p id=js></p><script>document.getElementById('js').textContent = 'ran'</script>"
                            + "<form method=post action=/><input name=n value=v><button id=go>go</button></form>";
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/html; charset=utf-8");
            exchange.sendResponseHeaders(200, bytes.length);
            exchange.getResponseBody().write(bytes);
            exchange.close();
        });
        server.start();
    }

    @AfterAll
    static void stop() {
        server.stop(0);
    }

    @Test
    void rendersRunsScriptsAndPostsForms() {
        BROWSER.driver().get("http://127.0.0.1:" + server.getAddress().getPort() + "/");
        BROWSER.waiting().until(ExpectedConditions.textToBe(By.id("js"), "ran"));
        assertThat(BROWSER.driver().findElement(By.id("text")).getText()).isEqualTo("<b>as text</b>");
        BROWSER.driver().findElement(By.id("go")).click();
        BROWSER.waiting().until(ExpectedConditions.textToBe(By.id("got"), "n=v"));
    }
}
