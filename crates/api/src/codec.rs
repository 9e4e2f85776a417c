//! The API's protobuf codec: prost's, except that a message that does not decode is the
//! sender's mistake.
//!
//! tonic answers a request it cannot decode `INTERNAL`, which tells a client the server is at
//! fault and invites a retry that can never succeed. A request that is not valid protobuf for
//! its call is an invalid argument, as Google's APIs answer a malformed payload; this codec
//! says so, naming the message type it expected.
//!
//! The generated client uses the same codec (tonic's builder sets one for both). Only a server
//! decodes the API's requests, all named `…Request`; a response that does not decode (a
//! server's or a proxy's fault, not the caller's) stays `INTERNAL`, as tonic has it.

use std::marker::PhantomData;

use prost::Message;
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// prost's codec with [`StrictDecoder`]; the generated client and server use it.
#[derive(Debug, Clone)]
pub struct StrictCodec<T, U> {
    _pd: PhantomData<(T, U)>,
}

impl<T, U> Default for StrictCodec<T, U> {
    fn default() -> Self {
        Self { _pd: PhantomData }
    }
}

impl<T, U> Codec for StrictCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = StrictDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::default().encoder()
    }

    fn decoder(&mut self) -> Self::Decoder {
        StrictDecoder(ProstCodec::<T, U>::default().decoder())
    }
}

/// Decodes as prost does; a message that does not decode is `INVALID_ARGUMENT`.
#[derive(Debug, Clone)]
pub struct StrictDecoder<U>(ProstDecoder<U>);

impl<U: Message + Default> Decoder for StrictDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        self.0.decode(buf).map_err(|e| {
            let name = message_name::<U>();
            if !name.ends_with("Request") {
                return e;
            }
            Status::invalid_argument(format!(
                "the message is not a valid {name}: {}",
                e.message()
            ))
        })
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.0.buffer_settings()
    }
}

/// `CreateClusterRequest` for `hypersaga_api::v1::CreateClusterRequest`.
fn message_name<U>() -> &'static str {
    let full = std::any::type_name::<U>();
    full.rsplit("::").next().unwrap_or(full)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1::CreateClusterRequest;

    #[test]
    fn names_the_message_without_its_module_path() {
        assert_eq!(
            message_name::<CreateClusterRequest>(),
            "CreateClusterRequest"
        );
    }
}
