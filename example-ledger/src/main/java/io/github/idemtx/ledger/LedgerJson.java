package io.github.idemtx.ledger;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.github.idemtx.core.Failure;
import io.github.idemtx.core.Rejection;
import io.github.idemtx.http.Problem;
import io.github.idemtx.http.StoredResponse;
import java.math.BigDecimal;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * The ledger's JSON, both ways: request fields read and checked (a bad one is a {@link Rejection},
 * which the library records and replays), and the responses written, problem+json included.
 */
final class LedgerJson {

    static final String JSON = "application/json";

    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Pattern MONEY = Pattern.compile("(0|[1-9][0-9]{0,14})\\.[0-9]{2}");
    private static final Pattern CURRENCY = Pattern.compile("[A-Z]{3}");

    private LedgerJson() {}

    // ---------------------------------------------------------------- reading

    /** The parsed body; the caller has checked that it is JSON. */
    static JsonNode parse(byte[] body) {
        try {
            return MAPPER.readTree(body);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    static String text(JsonNode body, String field) {
        JsonNode value = body.get(field);
        if (value == null || !value.isTextual()) {
            throw new Rejection("invalid_request", field + " must be a JSON string");
        }
        return value.asText();
    }

    static String currency(JsonNode body, String field) {
        String currency = text(body, field);
        if (!CURRENCY.matcher(currency).matches()) {
            throw new Rejection("invalid_request", "currency must be three upper-case letters, like BRL");
        }
        return currency;
    }

    static BigDecimal money(JsonNode body, String field) {
        String value = text(body, field);
        if (!MONEY.matcher(value).matches() || new BigDecimal(value).signum() <= 0) {
            throw new Rejection(
                    "invalid_request", field + " must be a positive amount with exactly two decimals, like \"10.00\"");
        }
        return new BigDecimal(value);
    }

    static UUID accountId(JsonNode body, String field) {
        return accountId(text(body, field));
    }

    /** An account id from a path or a body; one that is no UUID names no account. */
    static UUID accountId(String value) {
        return uuid(value)
                .orElseThrow(() -> new Rejection("account_not_found", "account " + value + " does not exist"));
    }

    static String destination(JsonNode body, String field) {
        String destination = text(body, field);
        if (destination.isBlank() || destination.length() > 200) {
            throw new Rejection("invalid_request", "destination must be 1 to 200 characters");
        }
        return destination;
    }

    /** The UUID in its canonical lower-case form, else empty. */
    static Optional<UUID> uuid(String value) {
        try {
            UUID id = UUID.fromString(value);
            return id.toString().equals(value.toLowerCase(Locale.ROOT)) ? Optional.of(id) : Optional.empty();
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
    }

    // ---------------------------------------------------------------- writing

    static StoredResponse account(Ledger.Account a, int status) {
        ObjectNode json = MAPPER.createObjectNode()
                .put("id", a.id().toString())
                .put("currency", a.currency())
                .put("balance", a.balance().setScale(2).toPlainString());
        return withLocation(StoredResponse.of(status, JSON, json.toString()), status, "/accounts/" + a.id());
    }

    static StoredResponse transfer(Ledger.Transfer t, int status) {
        ObjectNode json = MAPPER.createObjectNode()
                .put("id", t.id().toString())
                .put("from", t.from().toString())
                .put("to", t.to().toString())
                .put("amount", t.amount().setScale(2).toPlainString())
                .put("currency", t.currency())
                .put("createdAt", t.createdAt().toInstant().toString());
        return withLocation(StoredResponse.of(status, JSON, json.toString()), status, "/transfers/" + t.id());
    }

    static StoredResponse payout(Payouts.Payout p, int status) {
        return withLocation(StoredResponse.of(status, JSON, payoutJson(p).toString()), status, "/payouts/" + p.id());
    }

    static StoredResponse payouts(List<Payouts.Payout> payouts) {
        ArrayNode list = MAPPER.createArrayNode();
        payouts.forEach(p -> list.add(payoutJson(p)));
        return StoredResponse.of(200, JSON, list.toString());
    }

    private static ObjectNode payoutJson(Payouts.Payout p) {
        ObjectNode json = MAPPER.createObjectNode()
                .put("id", p.id().toString())
                .put("from", p.account().toString())
                .put("amount", p.amount().setScale(2).toPlainString())
                .put("currency", p.currency())
                .put("destination", p.destination())
                .put("state", p.state())
                .put("createdAt", p.createdAt().toInstant().toString());
        if (p.chargeId() != null) {
            json.put("chargeId", p.chargeId());
        }
        return json;
    }

    /** A 201 says where the new resource lives. */
    private static StoredResponse withLocation(StoredResponse response, int status, String location) {
        return status == 201 ? response.withHeader("Location", location) : response;
    }

    // ---------------------------------------------------------------- problems

    /** The HTTP answer of a recorded refusal: it depends on the failure alone, so replays match. */
    static StoredResponse rejection(Failure failure) {
        int status = switch (failure.code()) {
            case "account_not_found" -> 404;
            case "invalid_json", "invalid_request" -> 400;
            default -> 422;
        };
        return problem(status, failure.code(), title(failure.code()), failure.message());
    }

    static StoredResponse notFound(String what) {
        return problem(404, what + "_not_found", "Not found", "no such " + what + " in this tenant");
    }

    static StoredResponse problem(int status, String code, String title, String detail) {
        return new Problem("urn:ledger:problem:" + code, title, status, detail, Map.of("code", code)).toResponse();
    }

    private static String title(String code) {
        String spaced = code.replace('_', ' ');
        return Character.toUpperCase(spaced.charAt(0)) + spaced.substring(1);
    }
}
