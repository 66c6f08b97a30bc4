package io.github.idemtx.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Grouped bar charts, as standalone SVG files. */
final class Svg {

    private static final String[] COLORS = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1"};
    private static final String[] LIGHT = {"#a6bddb", "#fdd0a2", "#b7dfb0", "#f4b6b7", "#c4e3e0", "#dcc3d6"};

    private Svg() {}

    /** Throughput per strategy (groups) per client count (bars), labelled with the ratio to bare. */
    static String throughput(Report report) {
        List<String> strategies = new ArrayList<>();
        for (Report.Group g : report.groups()) {
            if (g.phase().equals(Report.MAIN) && !strategies.contains(g.strategy())) {
                strategies.add(g.strategy());
            }
        }
        strategies.sort(java.util.Comparator.comparingInt(Report::order));
        List<Integer> threads = report.mainThreads();
        double max = 1;
        for (Report.Group g : report.groups()) {
            if (g.phase().equals(Report.MAIN)) {
                max = Math.max(max, g.ops());
            }
        }
        int rounds =
                report.groups().isEmpty() ? 0 : report.groups().get(0).rounds().size();
        Chart c = new Chart(Math.max(760, 110 + strategies.size() * (40 + threads.size() * 46)), 470);
        c.title("Throughput per strategy and client count (ops/s, median of " + rounds + " interleaved rounds)");
        c.subtitle(String.valueOf(report.environment().getOrDefault("summary", "")));
        double top = niceCeiling(max * 1.12);
        c.yAxis(top, "ops/s (duplicate-burst: distinct effects/s)", false);
        double groupWidth = c.plotWidth() / Math.max(1, strategies.size());
        double barWidth = Math.min(44, (groupWidth - 24) / Math.max(1, threads.size()));
        for (int si = 0; si < strategies.size(); si++) {
            String s = strategies.get(si);
            double gx = c.left + si * groupWidth + (groupWidth - barWidth * threads.size()) / 2;
            for (int ti = 0; ti < threads.size(); ti++) {
                Report.Group g = report.group(Report.MAIN, s, threads.get(ti));
                if (g == null) {
                    continue;
                }
                double x = gx + ti * barWidth;
                double v = g.ops();
                Double ratio = report.ratioToBare(g);
                c.bar(
                        x,
                        barWidth - 4,
                        v / top,
                        COLORS[ti % COLORS.length],
                        String.format(Locale.ROOT, "%.0f", v),
                        ratio == null ? null : String.format(Locale.ROOT, "%.2fx", ratio),
                        s + ", " + threads.get(ti) + " thread(s): " + String.format(Locale.ROOT, "%.1f", v) + " ops/s");
            }
            c.xLabel(c.left + si * groupWidth + groupWidth / 2, s);
        }
        List<String> legend = new ArrayList<>();
        for (int t : threads) {
            legend.add(t + " client thread" + (t == 1 ? "" : "s"));
        }
        c.legend(legend, COLORS);
        c.note("Labels: ops/s and, below it, the ratio to bare at the same client count (per-round ratios, medianed).");
        return c.end();
    }

    /**
     * The retry-share phase: throughput of ADAPTIVE and of the two fixed orders at each step (groups,
     * in the phase's order), ADAPTIVE's bar labelled with its ratio to the better fixed order.
     */
    static String retryShare(Report report) {
        List<Integer> shares = report.retryShares();
        int threads = report.retryShareThreads().get(0);
        List<String> modes = Options.MIXED_STRATEGIES;
        double max = 1;
        for (int step = 0; step < shares.size(); step++) {
            for (String m : modes) {
                Report.Group g = report.group(Report.RETRY_SHARE + ":" + step, m, threads);
                if (g != null) {
                    max = Math.max(max, g.ops());
                }
            }
        }
        Chart c = new Chart(Math.max(760, 110 + shares.size() * (40 + modes.size() * 46)), 470);
        c.title("Retry share moving within one run: ADAPTIVE against the fixed orders, " + threads
                + " clients (ops/s, medians)");
        c.subtitle(String.valueOf(report.environment().getOrDefault("summary", "")));
        double top = niceCeiling(max * 1.12);
        c.yAxis(top, "ops/s", false);
        double groupWidth = c.plotWidth() / Math.max(1, shares.size());
        double barWidth = Math.min(44, (groupWidth - 24) / modes.size());
        for (int step = 0; step < shares.size(); step++) {
            double gx = c.left + step * groupWidth + (groupWidth - barWidth * modes.size()) / 2;
            List<Double> ratios = report.mixedOverBestFixed(step, threads);
            for (int mi = 0; mi < modes.size(); mi++) {
                Report.Group g = report.group(Report.RETRY_SHARE + ":" + step, modes.get(mi), threads);
                if (g == null) {
                    continue;
                }
                double v = g.ops();
                c.bar(
                        gx + mi * barWidth,
                        barWidth - 4,
                        v / top,
                        COLORS[mi % COLORS.length],
                        String.format(Locale.ROOT, "%.0f", v),
                        mi == 0 && !ratios.isEmpty()
                                ? String.format(Locale.ROOT, "%.2fx", Report.medianOf(ratios))
                                : null,
                        modes.get(mi) + " at " + shares.get(step) + "%: " + String.format(Locale.ROOT, "%.1f", v)
                                + " ops/s");
            }
            c.xLabel(c.left + step * groupWidth + groupWidth / 2, (step + 1) + ": " + shares.get(step) + "% retries");
        }
        c.legend(List.of("ADAPTIVE", "WORK_FIRST", "CLAIM_FIRST (the default)"), COLORS);
        c.note("ADAPTIVE's label below its ops/s: its ratio to the better fixed mode at that step (per-round"
                + " ratios, medianed).");
        return c.end();
    }

    /** The claim (and its floor's, floor-claim-first) ratio to bare per claim-table size and client count. */
    static String growth(Report report) {
        List<Long> targets = report.growthTargets();
        List<Integer> threads = report.growthThreads();
        Chart c = new Chart(Math.max(760, 140 + targets.size() * (60 + threads.size() * 2 * 34)), 470);
        c.title("Cost as the claim table grows: ratio to bare (median of per-round ratios)");
        c.subtitle(String.valueOf(report.environment().getOrDefault("summary", "")));
        double top = 1.2;
        for (long t : targets) {
            for (int th : threads) {
                for (String s : List.of(Strategies.CLAIM, Strategies.FLOOR_CLAIM_FIRST, Strategies.CLAIM_PURGE)) {
                    Double r = report.ratio(Report.GROWTH + ":" + t, s, Strategies.BARE, th);
                    if (r != null) {
                        top = Math.max(top, niceCeiling(r * 1.15));
                    }
                }
            }
        }
        c.yAxis(top, "ratio to bare", true);
        List<String> series = List.of(Strategies.CLAIM, Strategies.FLOOR_CLAIM_FIRST, Strategies.CLAIM_PURGE);
        double groupWidth = c.plotWidth() / Math.max(1, targets.size());
        double barWidth = Math.min(34, (groupWidth - 24) / Math.max(1, threads.size() * series.size()));
        List<String> legend = new ArrayList<>();
        List<String> colors = new ArrayList<>();
        for (int ti = 0; ti < threads.size(); ti++) {
            for (int si = 0; si < series.size(); si++) {
                legend.add(series.get(si) + ", " + threads.get(ti) + " thr");
                colors.add(
                        si == 0
                                ? COLORS[ti % COLORS.length]
                                : si == 1 ? LIGHT[ti % LIGHT.length] : COLORS[(ti + 2) % COLORS.length]);
            }
        }
        for (int gi = 0; gi < targets.size(); gi++) {
            long target = targets.get(gi);
            String phase = Report.GROWTH + ":" + target;
            int bars = threads.size() * series.size();
            double gx = c.left + gi * groupWidth + (groupWidth - barWidth * bars) / 2;
            int b = 0;
            for (int ti = 0; ti < threads.size(); ti++) {
                for (int si = 0; si < series.size(); si++, b++) {
                    Double r = report.ratio(phase, series.get(si), Strategies.BARE, threads.get(ti));
                    if (r == null) {
                        continue;
                    }
                    c.bar(
                            gx + b * barWidth,
                            barWidth - 3,
                            r / top,
                            colors.get(b),
                            String.format(Locale.ROOT, "%.2f", r),
                            null,
                            series.get(si) + ", " + threads.get(ti) + " thread(s), " + Report.human(target) + " rows: "
                                    + r);
                }
            }
            Report.Group claim = report.group(phase, Strategies.CLAIM, threads.get(0));
            long rows = claim == null ? target : claim.atStart().rows();
            c.xLabel(
                    c.left + gi * groupWidth + groupWidth / 2,
                    (target == 0 ? "empty" : Report.human(target) + " preloaded") + " (" + Report.human(rows)
                            + " rows)");
        }
        c.legend(legend, colors.toArray(String[]::new));
        c.note(
                "claim+purge: claim with purgeExpired(limit) beside it (back to back while it returns the limit, else once a second).");
        return c.end();
    }

    static double niceCeiling(double v) {
        if (v <= 0) {
            return 1;
        }
        double exp = Math.pow(10, Math.floor(Math.log10(v)));
        for (double m : new double[] {1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10}) {
            if (m * exp >= v) {
                return m * exp;
            }
        }
        return 10 * exp;
    }

    /** A small SVG canvas with a plot area. */
    private static final class Chart {
        final int width;
        final int height;
        final double left = 80;
        final double right = 20;
        final double topY = 70;
        final double bottom = 120;
        final StringBuilder sb = new StringBuilder();

        Chart(int width, int height) {
            this.width = width;
            this.height = height;
            sb.append("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"")
                    .append(width)
                    .append("\" height=\"")
                    .append(height)
                    .append("\" viewBox=\"0 0 ")
                    .append(width)
                    .append(' ')
                    .append(height)
                    .append("\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n");
            sb.append("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n");
        }

        double plotWidth() {
            return width - left - right;
        }

        double plotHeight() {
            return height - topY - bottom;
        }

        double baseY() {
            return topY + plotHeight();
        }

        void title(String t) {
            text(left, 26, t, "start", 16, "bold", "#222");
        }

        void subtitle(String t) {
            int max = (int) ((width - left - right) / 6.2);
            if (t.length() <= max) {
                text(left, 46, t, "start", 11, "normal", "#555");
                return;
            }
            int cut = t.lastIndexOf("; ", max);
            cut = cut > 0 ? cut + 1 : max;
            text(left, 44, t.substring(0, cut).trim(), "start", 11, "normal", "#555");
            text(left, 58, t.substring(cut).trim(), "start", 11, "normal", "#555");
        }

        void note(String t) {
            text(left, height - 12, t, "start", 11, "normal", "#555");
        }

        void yAxis(double top, String label, boolean ratio) {
            int ticks = 5;
            for (int i = 0; i <= ticks; i++) {
                double v = top * i / ticks;
                double y = baseY() - plotHeight() * i / ticks;
                sb.append(String.format(
                        Locale.ROOT,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>%n",
                        left,
                        y,
                        width - right,
                        y));
                text(
                        left - 6,
                        y + 4,
                        ratio ? String.format(Locale.ROOT, "%.2f", v) : String.format(Locale.ROOT, "%.0f", v),
                        "end",
                        11,
                        "normal",
                        "#444");
            }
            if (ratio) {
                double y = baseY() - plotHeight() / top;
                sb.append(String.format(
                        Locale.ROOT,
                        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>%n",
                        left,
                        y,
                        width - right,
                        y));
            }
            sb.append(String.format(
                    Locale.ROOT,
                    "<text transform=\"translate(18,%.1f) rotate(-90)\" text-anchor=\"middle\" fill=\"#444\">%s</text>%n",
                    topY + plotHeight() / 2,
                    esc(label)));
            sb.append(String.format(
                    Locale.ROOT,
                    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>%n",
                    left,
                    baseY(),
                    width - right,
                    baseY()));
        }

        void bar(double x, double w, double fraction, String color, String label, String label2, String tooltip) {
            double h = Math.max(0, Math.min(1, fraction)) * plotHeight();
            double y = baseY() - h;
            sb.append(String.format(
                    Locale.ROOT,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s</title></rect>%n",
                    x,
                    y,
                    w,
                    h,
                    color,
                    esc(tooltip)));
            text(x + w / 2, y - (label2 == null ? 4 : 17), label, "middle", 10, "normal", "#222");
            if (label2 != null) {
                text(x + w / 2, y - 4, label2, "middle", 10, "bold", "#222");
            }
        }

        void xLabel(double x, String label) {
            text(x, baseY() + 18, label, "middle", 12, "normal", "#222");
        }

        void legend(List<String> labels, String[] colors) {
            double x = left;
            double y = baseY() + 44;
            for (int i = 0; i < labels.size(); i++) {
                if (x + 160 > width - right) {
                    x = left;
                    y += 18;
                }
                sb.append(String.format(
                        Locale.ROOT,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>%n",
                        x,
                        y - 10,
                        colors[i % colors.length]));
                text(x + 17, y, labels.get(i), "start", 11, "normal", "#222");
                x += Math.max(130, 17 + labels.get(i).length() * 6.5 + 16);
            }
        }

        void text(double x, double y, String t, String anchor, int size, String weight, String color) {
            sb.append(String.format(
                    Locale.ROOT,
                    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" font-size=\"%d\" font-weight=\"%s\" fill=\"%s\">%s</text>%n",
                    x,
                    y,
                    anchor,
                    size,
                    weight,
                    color,
                    esc(t)));
        }

        String end() {
            return sb.append("</svg>\n").toString();
        }

        private static String esc(String s) {
            return s.replace("&", "&amp;")
                    .replace("<", "&lt;")
                    .replace(">", "&gt;")
                    .replace("\"", "&quot;");
        }
    }
}
