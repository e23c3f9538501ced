/**
 * Something that can be stopped: the return value of every subscription.
 *
 * @example
 * const sub = budget.events.on('denied', log);
 * sub.dispose();
 */
export interface Disposable {
  dispose(): void;
}

/** A listener for one event of an event map. */
export type Listener<T> = (payload: T) => void;

/**
 * A small typed event emitter. Metrics, logs and the CLI's live views subscribe to it; the core never
 * imports them. A listener that throws is reported to `onListenerError` and never breaks the emitter's
 * caller: a broken metrics hook must not fail a job.
 *
 * @example
 * type Events = { granted: { dependency: string } };
 * const events = new EventBus<Events>();
 * const sub = events.on('granted', (e) => console.log(e.dependency));
 * events.emit('granted', { dependency: 'search' });
 * sub.dispose();
 */
export class EventBus<Events extends object> {
  readonly #listeners = new Map<keyof Events, Set<Listener<never>>>();

  constructor(private readonly onListenerError: (error: unknown) => void = () => {}) {}

  on<K extends keyof Events>(event: K, listener: Listener<Events[K]>): Disposable {
    let set = this.#listeners.get(event);
    if (!set) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    set.add(listener as Listener<never>);
    return { dispose: () => void set.delete(listener as Listener<never>) };
  }

  once<K extends keyof Events>(event: K, listener: Listener<Events[K]>): Disposable {
    const sub = this.on(event, (payload) => {
      sub.dispose();
      listener(payload);
    });
    return sub;
  }

  emit<K extends keyof Events>(event: K, payload: Events[K]): void {
    const set = this.#listeners.get(event);
    if (!set || set.size === 0) return;
    for (const listener of [...set]) {
      try {
        (listener as Listener<Events[K]>)(payload);
      } catch (error) {
        this.onListenerError(error);
      }
    }
  }

  /** True when anyone listens to `event`: lets a hot path skip building a payload nobody reads. */
  has<K extends keyof Events>(event: K): boolean {
    return (this.#listeners.get(event)?.size ?? 0) > 0;
  }
}
