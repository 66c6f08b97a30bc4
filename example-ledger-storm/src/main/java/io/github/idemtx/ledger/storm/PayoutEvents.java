package io.github.idemtx.ledger.storm;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.idemtx.core.IdempotencyKey;
import io.github.idemtx.core.Scope;
import io.github.idemtx.db.testing.LocalBroker;
import io.github.idemtx.jooq.outbox.Outbox;
import java.io.IOException;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The ledger's payout events under the payout storms, both banks ({@code payout.paid}, through the
 * library's outbox, added in the transaction that records the bank's answer): the ledger runs with
 * {@code --amqp-url} and an exchange of the storm's own, whose queue is bound for {@code payout.#}
 * and {@code *.applied} (the deposits' events, so that none is unroutable); {@link StormEvents}
 * declares them, applies the events in its {@link EventReadModel}, drains the relay and checks every
 * outbox message (the deposits' included). This class adds the payouts' checks: every payout the
 * ledger holds as paid has one outbox message under the id {@code Outbox.messageId(tenant, key,
 * "payout-paid-" + payout id)}, delivered at least once under that id and no other, with its
 * charge, amount, account and currency; no {@code payout.paid} event for a payout refused, at an
 * operator or never paid, nor of an unknown id. And the SIGKILLs of the ledger: once a killed ledger
 * is dead, the events it left undelivered (pending, leased by its relay mid-batch or not yet
 * leased) are noted; each must be delivered afterwards, by the ledger started in its place, and
 * reach the queue, and with kills asked for some kill must have left some.
 *
 * <p>Without a broker ({@link LocalBroker}), the events are off and not checked, as in {@link Storm}.
 */
final class PayoutEvents implements AutoCloseable {

    /** The routing key, and the {@code event} field, of a paid payout's event. */
    static final String PAID = "payout.paid";
    /** A paid payout's outbox name is this and the payout's id. */
    private static final String NAME = "payout-paid-";

    private static final ObjectMapper MAPPER = new ObjectMapper();
    /**
     * The ledger's relay polls this often (the main storm's every 50 ms): a payout paid in the last
     * poll's interval is still undelivered, so a kill during the load all but surely leaves events for
     * the next ledger; the drain at the end waits a poll or two more.
     */
    static final int POLL_MS = 500;

    private final StormEvents events;
    private SideDatabase db;
    private String schema;
    /** The events left pending when a ledger was SIGKILLed, and those of them leased by its relay. */
    private final Set<String> leftAtKills = ConcurrentHashMap.newKeySet();

    private final Set<String> leasedAtKills = ConcurrentHashMap.newKeySet();
    /** For each kill, the events it left pending. */
    private final List<Integer> perKill = Collections.synchronizedList(new ArrayList<>());

    private PayoutEvents(StormEvents events) {
        this.events = events;
    }

    /** A paid payout as the ledger holds it: its id, account, amount, currency and charge. */
    private record Paid(String id, String account, BigDecimal amount, String currency, String charge) {
        /** Whether {@code event} announces this payout. */
        boolean announcedBy(JsonNode event) {
            return PAID.equals(event.path("event").asText())
                    && id.equals(event.path("id").asText())
                    && account.equals(event.path("from").asText())
                    && currency.equals(event.path("currency").asText())
                    && charge.equals(event.path("chargeId").asText())
                    && event.path("amount").isTextual()
                    && amount.compareTo(new BigDecimal(event.path("amount").asText())) == 0;
        }
    }

    /**
     * The exchange and its queue on the machine's broker ({@link LocalBroker#url()}), or null (said on
     * {@code progress}) when no broker answers: then the events are off and not checked.
     */
    static PayoutEvents declare(PrintStream progress) throws IOException {
        Optional<String> noBroker = LocalBroker.unavailable();
        if (noBroker.isPresent()) {
            progress.println("payout storm: the ledger's events are off, not checked: " + noBroker.get());
            return null;
        }
        String exchange = "ledger-payout-events-" + Long.toHexString(System.nanoTime());
        return new PayoutEvents(StormEvents.declare(LocalBroker.url(), exchange, "payout.#", "*.applied"));
    }

    /**
     * The ledger's flags: the broker, the exchange, its lease and a poll of {@value #POLL_MS} ms, and a
     * transfer queue of the storm's own.
     */
    List<String> ledgerArgs() {
        List<String> args = new ArrayList<>(events.ledgerArgs(POLL_MS));
        args.addAll(events.transferQueueArgs());
        return args;
    }

    /** Starts the read model on the queue, its table in the ledger's {@code schema} (there once the ledger started). */
    void start(SideDatabase db, String schema) throws IOException, SQLException {
        this.db = db;
        this.schema = schema;
        events.startReadModel(db, schema);
    }

    private String outbox() {
        return schema + ".idempotency_outbox WHERE destination = '" + events.exchange() + "'";
    }

    /** Called once a SIGKILLed ledger is dead: notes the events it left undelivered. */
    void afterKill(PrintStream progress) throws IOException {
        if (db == null) {
            return;
        }
        int[] left = new int[2];
        try {
            db.query("SELECT message_id, lease_owner IS NOT NULL FROM " + outbox() + " AND status = 'pending'", rs -> {
                leftAtKills.add(rs.getString(1));
                left[0]++;
                if (rs.getBoolean(2)) {
                    leasedAtKills.add(rs.getString(1));
                    left[1]++;
                }
            });
        } catch (SQLException e) {
            throw new IOException("reading the events a killed ledger left undelivered failed", e);
        }
        perKill.add(left[0]);
        progress.println("payout storm: the SIGKILLed ledger left " + left[0] + " event(s) undelivered, " + left[1]
                + " of them leased by its relay");
    }

    /**
     * Drains the relay and checks the events ({@link StormEvents#check}: bounded, what is missing then
     * fails), then the payouts' events and what the kills left (of {@code kills} asked for), into
     * {@code results}.
     */
    void check(int kills, Map<String, Boolean> results, PrintStream progress) throws Exception {
        long start = System.nanoTime();
        events.check(db, schema, results, progress);
        Map<String, Paid> paid = new HashMap<>(); // the expected message id -> its paid payout
        Map<String, String> states = new HashMap<>(); // payout id -> state
        db.query(
                "SELECT id, tenant, idem_key, state, account_id, amount, currency, charge_id FROM " + schema
                        + ".payout",
                rs -> {
                    states.put(rs.getString(1), rs.getString(4));
                    if ("paid".equals(rs.getString(4))) {
                        String id = rs.getString(1);
                        String messageId = Outbox.messageId(
                                        Scope.of(rs.getString(2)), IdempotencyKey.of(rs.getString(3)), NAME + id)
                                .toString();
                        paid.put(
                                messageId,
                                new Paid(id, rs.getString(5), rs.getBigDecimal(6), rs.getString(7), rs.getString(8)));
                    }
                });
        Map<String, String> rows = new HashMap<>(); // the payouts' outbox messages: message id -> name
        Set<String> delivered = new HashSet<>();
        db.query("SELECT message_id, name, status FROM " + outbox(), rs -> {
            if (rs.getString(2).startsWith(NAME)) {
                rows.put(rs.getString(1), rs.getString(2));
            }
            if ("delivered".equals(rs.getString(3))) {
                delivered.add(rs.getString(1));
            }
        });
        long rowsAsNamed = paid.entrySet().stream()
                .filter(e -> (NAME + e.getValue().id()).equals(rows.get(e.getKey())))
                .count();
        // what reached the queue: the payout events' message ids by the payout their body names
        EventReadModel model = events.readModel();
        Map<String, Set<String>> idsOf = new HashMap<>();
        Set<String> ids = new HashSet<>();
        List<String> wrong = new ArrayList<>();
        List<String> unknown = new ArrayList<>();
        for (Map.Entry<String, Set<EventReadModel.Delivered>> e : model.contents.entrySet()) {
            for (EventReadModel.Delivered d : e.getValue()) {
                JsonNode body = parse(d.body());
                if (!PAID.equals(d.routingKey())
                        && !PAID.equals(body.path("event").asText())) {
                    continue; // a deposit's: StormEvents checked it
                }
                String payout = body.path("id").asText();
                ids.add(e.getKey());
                idsOf.computeIfAbsent(payout, k -> new HashSet<>()).add(e.getKey());
                Paid p = paid.get(e.getKey());
                if (p == null) {
                    unknown.add(e.getKey() + " (payout " + payout + ": " + states.getOrDefault(payout, "none") + ")");
                } else if (!PAID.equals(d.routingKey()) || !p.announcedBy(body)) {
                    wrong.add(e.getKey() + " " + d);
                }
            }
        }
        rows.keySet().stream()
                .filter(id -> !paid.containsKey(id))
                .forEach(id -> unknown.add("an outbox message " + id + " (" + rows.get(id) + ")"));
        long once = paid.entrySet().stream()
                .filter(e -> Set.of(e.getKey()).equals(idsOf.get(e.getValue().id())))
                .count();
        long deliveries =
                ids.stream().mapToLong(id -> model.seen.getOrDefault(id, 0)).sum();
        progress.printf(
                "payout storm: payout events: %d paid payouts, %d distinct ids delivered (%d deliveries);"
                        + " drained and checked in %.1f s%n",
                paid.size(), ids.size(), deliveries, (System.nanoTime() - start) / 1e9);
        results.put(
                "every paid payout has one outbox message, payout-paid-<its id>, under the message id of its claim"
                        + " and that name (" + rowsAsNamed + " of " + paid.size() + ", " + rows.size() + " in all)",
                rowsAsNamed == paid.size() && rows.size() == paid.size());
        results.put(
                "every paid payout's event (" + PAID + ") reached the queue at least once, under exactly one message"
                        + " id, its expected one, with its charge, amount, account and currency (" + once + " of "
                        + paid.size() + ", in " + deliveries + " deliveries"
                        + (wrong.isEmpty() ? "" : "; wrong: " + few(wrong))
                        + ")",
                once == paid.size() && wrong.isEmpty());
        results.put(
                "no payout event for a payout refused, at an operator or never paid, nor of an unknown id ("
                        + unknown.size() + (unknown.isEmpty() ? "" : ": " + few(unknown)) + ")",
                unknown.isEmpty());
        killed(kills, delivered, model.seen.keySet(), results, progress);
    }

    /** The kills' check: what each SIGKILLed ledger left undelivered was delivered afterwards and reached the queue. */
    private void killed(
            int kills, Set<String> delivered, Set<String> seen, Map<String, Boolean> results, PrintStream progress) {
        long after = leftAtKills.stream().filter(delivered::contains).count();
        long reached = leftAtKills.stream().filter(seen::contains).count();
        long leaving;
        synchronized (perKill) {
            leaving = perKill.stream().filter(n -> n > 0).count();
        }
        progress.printf(
                "payout storm: events the SIGKILLed ledgers left undelivered: %d (%d leased mid-batch), by kill %s%n",
                leftAtKills.size(), leasedAtKills.size(), perKill);
        results.put(
                "every event a SIGKILLed ledger left undelivered (" + leftAtKills.size() + ", " + leasedAtKills.size()
                        + " leased by its relay) was delivered afterwards, by the ledger started in its place, and"
                        + " reached the queue (" + after + " and " + reached + "); kills that left some: " + leaving
                        + " of " + perKill.size() + " (" + kills + " made)",
                after == leftAtKills.size() && reached == leftAtKills.size() && (kills == 0 || leaving > 0));
    }

    /** The first few of {@code items}, for a line of the report. */
    private static String few(List<String> items) {
        return items.size() <= 5 ? items.toString() : items.subList(0, 5) + " and " + (items.size() - 5) + " more";
    }

    private static JsonNode parse(String body) {
        try {
            return MAPPER.readTree(body);
        } catch (IOException e) {
            return MAPPER.createObjectNode().put("unreadable", body);
        }
    }

    /** Deletes the queues and the exchange ({@link StormEvents#close}). */
    @Override
    public void close() {
        events.close();
    }
}
