import { useState } from 'preact/hooks';
import { setToken, token, WRITABLE } from '../api.js';

/** Where the operator gives the console's token (kept for this tab only), or a note that it is read-only. */
export function TokenBox() {
  const [has, setHas] = useState(token() !== null);
  const [value, setValue] = useState('');
  if (!WRITABLE)
    return (
      <p class="mode" role="status">
        Read-only: started without a token
      </p>
    );
  if (has)
    return (
      <div class="mode">
        <span role="status">Actions enabled</span>{' '}
        <button
          type="button"
          onClick={() => {
            setToken(null);
            setHas(false);
          }}
        >
          Forget token
        </button>
      </div>
    );
  return (
    <form
      class="mode"
      onSubmit={(e) => {
        e.preventDefault();
        if (value) {
          setToken(value);
          setHas(true);
          setValue('');
        }
      }}
    >
      <label>
        Token{' '}
        <input
          type="password"
          autocomplete="off"
          value={value}
          onInput={(e) => setValue(e.currentTarget.value)}
        />
      </label>{' '}
      <button type="submit">Enable actions</button>
    </form>
  );
}

/** Whether actions can be offered now: the server has a token and this tab knows one. */
export function canAct(): boolean {
  return WRITABLE && token() !== null;
}
