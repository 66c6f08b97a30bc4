package io.github.idemtx.jooq.internal.flow.effect;

import io.github.idemtx.core.RemoteOutcome;

/** A holder's outcome, and how its claim was settled on the way (what a recovery pass reports). */
record Settlement<T>(RemoteOutcome<T> outcome, EffectFlow.Settled how) {}
