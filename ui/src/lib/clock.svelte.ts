// One shared clock for every countdown and "ago" on screen: a single timer ticks once a
// second, on the wall clock's second, while at least one component reads it, and stops when
// none does. Rows never start timers of their own, so a long list stays cheap.

import { createSubscriber } from "svelte/reactivity";

export class Clock {
  #now = Date.now();
  #active = false;
  #subscribe = createSubscriber((update) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = () => {
      this.#now = Date.now();
      update();
      timer = setTimeout(tick, 1000 - (this.#now % 1000));
    };
    this.#active = true;
    this.#now = Date.now();
    timer = setTimeout(tick, 1000 - (this.#now % 1000));
    return () => {
      this.#active = false;
      clearTimeout(timer);
    };
  });

  /** Milliseconds since the epoch: the last tick's inside components, the current time elsewhere. */
  get now(): number {
    this.#subscribe();
    return this.#active ? this.#now : Date.now();
  }
}

export const clock = new Clock();
