//! Reading an [`Entry`] without buffering its line. The derived reader of an envelope with a
//! flattened, internally tagged body collects every line into serde's intermediate `Content` tree
//! (once for the flatten, once more for the tag) before it builds the entry; at 100k entries that
//! was most of the time replay spends reading. Lines as [`super::jsonl::to_line`] writes them have
//! the envelope first and `type` last of it, so the body's fields can go straight to the variant's
//! own reader. Lines in another order (hand-written, or from an older writer) are buffered as
//! before.

use super::entry::{Entry, EntryBody, TaggedBody};
use chrono::{DateTime, Utc};
use serde::de::value::{MapAccessDeserializer, StrDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

impl<'de> Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EntryVisitor)
    }
}

/// A key or the `type` value, borrowed from the line when it has no escapes.
struct Str<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor;
        impl<'de> Visitor<'de> for StrVisitor {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(StrVisitor)
    }
}

#[derive(Default, Serialize)]
struct Envelope {
    #[serde(skip_serializing_if = "Option::is_none")]
    v: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run_id: Option<String>,
}

impl Envelope {
    fn complete<E: de::Error>(self, body: EntryBody) -> Result<Entry, E> {
        Ok(Entry {
            v: self.v.ok_or_else(|| E::missing_field("v"))?,
            seq: self.seq.ok_or_else(|| E::missing_field("seq"))?,
            ts: self.ts.ok_or_else(|| E::missing_field("ts"))?,
            run_id: self.run_id.ok_or_else(|| E::missing_field("run_id"))?,
            body,
        })
    }
}

struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = Entry;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a history entry (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Entry, A::Error> {
        let mut env = Envelope::default();
        while let Some(Str(key)) = map.next_key::<Str>()? {
            match key.as_ref() {
                "v" => env.v = Some(map.next_value()?),
                "seq" => env.seq = Some(map.next_value()?),
                "ts" => {
                    let Str(text) = map.next_value::<Str>()?;
                    let ts = super::timestamp::parse_utc(&text).map_err(de::Error::custom)?;
                    env.ts = Some(ts);
                }
                "run_id" => env.run_id = Some(map.next_value()?),
                "type"
                    if env.v.is_some()
                        && env.seq.is_some()
                        && env.ts.is_some()
                        && env.run_id.is_some() =>
                {
                    // The envelope is read: the rest of the map is the body's fields.
                    let Str(tag) = map.next_value::<Str>()?;
                    let body = TaggedBody::deserialize(Tagged { tag: &tag, map })?;
                    return env.complete(body);
                }
                _ => return buffered(env, key, map),
            }
        }
        Err(de::Error::missing_field("type"))
    }
}

/// A line whose body fields do not follow the whole envelope: read the rest into a JSON map and
/// build the entry from it with the derived (buffering) reader.
fn buffered<'de, A: MapAccess<'de>>(
    env: Envelope,
    key: Cow<'de, str>,
    mut map: A,
) -> Result<Entry, A::Error> {
    #[derive(Deserialize)]
    struct Flat {
        v: u32,
        seq: u64,
        ts: DateTime<Utc>,
        run_id: String,
        #[serde(flatten)]
        body: EntryBody,
    }
    let Ok(Value::Object(mut fields)) = serde_json::to_value(&env) else {
        unreachable!("an envelope serialises to an object")
    };
    fields.insert(key.into_owned(), map.next_value()?);
    while let Some(Str(key)) = map.next_key::<Str>()? {
        fields.insert(key.into_owned(), map.next_value()?);
    }
    let flat = Flat::deserialize(Value::Object(fields)).map_err(de::Error::custom)?;
    Ok(Entry {
        v: flat.v,
        seq: flat.seq,
        ts: flat.ts,
        run_id: flat.run_id,
        body: flat.body,
    })
}

/// The body of a line after its `type`: the variant's name, then its fields as the map's rest.
struct Tagged<'a, A> {
    tag: &'a str,
    map: A,
}

impl<'de, A: MapAccess<'de>> Deserializer<'de> for Tagged<'_, A> {
    type Error = A::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_enum(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de, A: MapAccess<'de>> de::EnumAccess<'de> for Tagged<'_, A> {
    type Error = A::Error;
    type Variant = Rest<A>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Rest<A>), A::Error> {
        let name: StrDeserializer<A::Error> = self.tag.into_deserializer();
        Ok((seed.deserialize(name)?, Rest(self.map)))
    }
}

/// The variant's fields are the rest of the entry's map.
struct Rest<A>(A);

impl<'de, A: MapAccess<'de>> de::VariantAccess<'de> for Rest<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        seed.deserialize(MapAccessDeserializer::new(self.0))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, A::Error> {
        visitor.visit_map(self.0)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        visitor.visit_map(self.0)
    }
}
