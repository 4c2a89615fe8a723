// ESM entry: the CommonJS implementation re-exported, so both module systems
// share one set of classes (`instanceof` holds across them).
import stateseal from './index.cjs';

export const { KeysetCodec, createStatesealCodec, StatesealError, InvalidRequestStateError } = stateseal;
export default stateseal;
